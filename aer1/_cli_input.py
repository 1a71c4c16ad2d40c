"""The receipt a subcommand of ``aer1`` reads: parsed strictly, its members checked, or one line of error.

Kept apart from the command's parser so that the subcommands in modules of their own
(``erase``, ``log``) read receipts the same way without importing the command.
"""

from __future__ import annotations

from typing import Any

from .verifier._output import CliError

__all__ = ["read_receipt"]


def read_receipt(path: str) -> dict[str, Any]:
    """A receipt whose members are well-formed: odd shapes are refused here, not deep in a command."""
    from .verifier._checks import claims_profile
    from .verifier._parse import MalformedInput, parse_strict, read_input
    from .verifier._report import CheckResult
    from .verifier._steps import check_members

    try:
        receipt = parse_strict(read_input(path), what=path)
    except MalformedInput as e:
        raise CliError(str(e)) from e
    result = CheckResult(2, "members")
    if not check_members(receipt, isinstance(receipt, dict) and claims_profile(receipt), result):
        raise CliError(f"{path} is not a well-formed receipt: {result.failures[0].reason}")
    assert isinstance(receipt, dict)
    return receipt
