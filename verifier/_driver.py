"""The one entry of a receipt's verification: read it by the path its size and ``jobs`` pick, check it, report.

:func:`aer1.verifier.verify_receipt` calls :func:`verify_on_paths` with the default
:class:`~aer1.verifier._paths.Paths`; a test passes its own to choose the reader (held parsed,
cut into runs of step lines, streamed) or the block sizes, and so forces a path without
changing a module's constants. Every path ends in the same report.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._limits import MAX_PARSE_COST_BYTES, parse_cost
from .._link import LINK_KIND
from .._receipt import evidence_path_for
from ._fast import Passed
from ._parallel import quick_steps
from ._parse import MalformedInput, check_json_value, parse_strict, parse_unwalked, read_limited
from ._paths import DEFAULT_PATHS, Paths
from ._report import Report

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._assemble import Given

__all__ = ["verify_kept", "verify_on_paths"]


def verify_on_paths(receipt: Mapping[str, Any] | str | os.PathLike[str] | bytes, **options: Any) -> Report:
    """:func:`verify_receipt`, with ``paths`` choosing the reader and the block sizes (tests pick a path by it);
    the options are :func:`verify_kept`'s."""
    return verify_kept(receipt, **options)[0]


def verify_kept(receipt: Mapping[str, Any] | str | os.PathLike[str] | bytes, *, jobs: int = 1,
                paths: Paths = DEFAULT_PATHS, **given: Unpack[Given]) -> tuple[Report, Any]:
    """:func:`verify_on_paths`, and the receipt as it was parsed for the checks (None when it was streamed,
    split or could not be parsed): an archive run's log entry and policy read it instead of parsing it again.

    ``given``: the options of :func:`aer1.verifier.verify_receipt` that reach the checks (:class:`~._assemble.Given`).
    """
    from ._assemble import Given, fresh_checks, skip_rest, steps_checked
    from ._checks import claims_profile
    from ._steps import check_members

    unknown = given.keys() - Given.__optional_keys__
    if unknown:  # as a misspelt keyword of a plain signature would
        raise TypeError(f"verify_kept() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    evidence, trusted_key_ids = given.get("evidence"), given.get("trusted_key_ids")
    checks = fresh_checks()
    c_parse, c_members = checks[0], checks[1]
    report = Report(None, checks)
    source: str | None = None
    given_parsed = not isinstance(receipt, (str, os.PathLike, bytes))
    passed: Passed | None = None
    quick_done = given_parsed
    try:
        if isinstance(receipt, (str, os.PathLike)):
            source = report.source = os.fspath(receipt)
            if trusted_key_ids is not None:
                trusted_key_ids = given["trusted_key_ids"] = set(trusted_key_ids)  # read by every check it reaches
            data = None
            if not (os.path.isfile(source) and os.path.getsize(source) >= paths.stream_min_bytes):
                data = read_limited(source)
            if jobs > 1 and (data is None or len(data) >= paths.split_min_bytes):
                from ._split import verify_split  # large files only: the fork and its pipes load here

                split = verify_split(source, data, jobs, paths=paths, **given)
                if split is not None:
                    return split, None
            if data is None or parse_cost(data) > MAX_PARSE_COST_BYTES:  # large, or costly to hold parsed
                from ._stream import verify_streaming  # loaded only for a file streamed

                return verify_streaming(source, paths=paths, **given), None
            wf, owed = parse_unwalked(data, what=source)  # size and cost checked just above
            if owed:  # steps the quick path passes are JSON data within the limits: the walk skips them
                passed, quick_done = quick_steps(wf, jobs, paths), True
                check_json_value(wf if passed is None else {k: v for k, v in wf.items() if k != "steps"})
            # What a later reader of the file (a policy, a bundle's links) checks it reads the same bytes by.
            c_parse.facts["sha256"] = hashlib.sha256(data).hexdigest()
            if evidence is None and os.path.lexists(evidence_path_for(source)):
                evidence = evidence_path_for(source)
        elif isinstance(receipt, bytes):
            wf = parse_strict(receipt, what="the receipt")
        else:
            wf = receipt
            passed = quick_steps(wf, jobs, paths)  # steps it passes are JSON data: the walk covers the rest
            check_json_value(wf if passed is None else {k: v for k, v in wf.items() if k != "steps"})
    except MalformedInput as e:
        c_parse.fail(str(e))
        skip_rest(checks[1:], "the input is not JSON data" if given_parsed else "the input could not be parsed")
        return report, None
    c_parse.passed("given as parsed JSON data within limits" if given_parsed
                   else "strict UTF-8 JSON; no duplicate keys; size and depth within limits")
    from ._kind import refuse_unless_receipt

    if refuse_unless_receipt(report, wf):  # not a receipt: MALFORMED (exit 2), never a receipt that fails
        return report, None

    if not quick_done:
        passed = quick_steps(wf, jobs, paths)
    checker = check_members(wf, isinstance(wf, dict) and claims_profile(wf), c_members, passed)
    if checker is None:
        skip_rest(checks[2:], "members check failed")
        return report, None
    signed = None
    if passed is not None and isinstance(wf, dict) and "signature" in wf:  # every step passed the quick checks
        from ._signed import signing_input_of_passed

        signed = functools.partial(signing_input_of_passed, wf)
    report = steps_checked(report, wf, checker, evidence_view=wf, evidence=evidence, signed=signed,
                           beside=None if source is None else evidence_path_for(source),
                           trusted_key_ids=trusted_key_ids, expected_root=given.get("expected_root"),
                           expected_head=given.get("expected_head"), tsa_trust=given.get("tsa_trust"),
                           keyring=given.get("keyring"),
                           links=checker.links if checker.links is not None
                           else sum(1 for s in wf["steps"] if s.get("kind") == LINK_KIND))
    return report, wf
