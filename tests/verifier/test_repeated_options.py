"""Trial: an option that takes one value, given twice, silently kept the last.

``--expected-root WRONG --expected-root RIGHT`` said VALID, root pinned: the first pin was
dropped without a word, as were a first ``--evidence``, ``--trusted-keys`` or ``--keyring``.
Every single-valued option of both commands now refuses a second occurrence (exit 2, one
line; with ``--json`` one JSON object). Repeatable options (``--key``, ``--require``,
``--tsa``) still repeat.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aer1._cli import main as aer1_main

from ..cli_runs import Run

ROOT_B = "f" * 64


def _root(receipt: Path) -> str:
    return str(json.loads(receipt.read_text())["merkle_root"])


@pytest.mark.parametrize("option", ["--expected-root", "--expected-head"])
def test_second_pin_is_refused_not_one_dropped(receipt: Path, run_cli: Run, option: str) -> None:
    real = _root(receipt) if option == "--expected-root" else json.loads(receipt.read_text())["chain_head"]
    for first, second in ((ROOT_B, real), (real, ROOT_B)):
        code, out, err = run_cli(option, first, option, second, receipt)
        assert (code, out) == (2, ""), f"got exit {code} {out!r}, want 2: two pins given"
        assert err.count("\n") == 1 and "given more than once" in err, err
    code, out, _ = run_cli("--json", option, ROOT_B, option, real, receipt)
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["exit_code"]) == (2, "MALFORMED", 2), doc


@pytest.mark.parametrize("option", ["--evidence", "--trusted-keys", "--keyring", "--tsa-roots", "--policy",
                                    "--receipt", "--summary", "--junit", "--attest", "--output", "--jobs"])
def test_every_single_valued_option_refuses_a_repeat(receipt: Path, run_cli: Run, option: str) -> None:
    value = "1" if option == "--jobs" else str(receipt.parent / "nothing-here")
    code, out, err = run_cli(option, value, option, value, receipt)
    assert code == 2 and out == "" and option in err and "given more than once" in err, err


def test_repeatable_options_still_repeat(receipt: Path, run_cli: Run) -> None:
    code, out, _ = run_cli("--require", "chain", "--require", "evidence", receipt)
    assert code == 0, out


@pytest.mark.parametrize("args", [
    ["prove", "{r}", "--step", "1", "--step", "2"],
    ["prove", "{r}", "--step", "1", "-o", "{d}/a.proof.json", "--output", "{d}/b.proof.json"],
    ["show", "{r}", "--rows", "10", "--rows", "20"],
    ["report", "{r}", "-o", "{d}/a.html", "-o", "{d}/b.html"],
    ["keygen", "-o", "{d}/a", "-o", "{d}/b"],
])  # fmt: skip
def test_aer1_subcommands_refuse_a_repeat(receipt: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    argv = [a.format(r=receipt, d=receipt.parent) for a in args]
    code = aer1_main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and "given more than once" in err, (code, out, err)
    assert not list(receipt.parent.glob("[ab].*")), "nothing may be written when the command is refused"
