"""No bytes in a log's files make ``aer1-verify --log --complete`` or ``aer1 log prove`` crash, and none in
its tiles pass.

Hypothesis changes one file of a real log (checkpoint, a hash tile, an entry bundle, a
receipt's ``.tlog-proof``, the ``log.vkey`` given as ``--log-key``): a byte flipped, the
file cut, bytes put in. Every run must end in one JSON verdict with exit 0, 1 or 2 and
no internal error; a changed tile or bundle is never VALID (their bytes are all bound by
the checkpoint's root), and a cut checkpoint is never VALID either, nor a receipt checked
against its cut proof alone (a completeness run answers from the walked log, not the proofs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aer1._cli import main as aer1_main
from aer1.verifier._cli import main

from .helpers import make_log

#: The files changed, by what they are; each a path relative to the test's folder.
TARGETS = ("checkpoint", "tile", "bundle", "proof", "vkey")


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, dict[str, Path]]:
    root = tmp_path_factory.mktemp("fuzz")
    log, vkey, archive, paths = make_log(root, 3)
    files = {"checkpoint": log / "checkpoint", "tile": log / "tile" / "0" / "000.p" / "6",
             "bundle": log / "tile" / "entries" / "000.p" / "6", "proof": paths[1].with_suffix(".tlog-proof"),
             "vkey": vkey}
    assert all(p.is_file() for p in files.values()), files
    return log, vkey, archive, files


def _mutate(data: bytes, how: str, at: int, junk: bytes) -> bytes:
    i = at % max(1, len(data))
    if how == "flip":
        return data[:i] + bytes([data[i] ^ (1 + at % 255)]) + data[i + 1:] if data else junk
    if how == "cut":
        return data[:i]
    return data[:i] + junk + data[i:]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(TARGETS), how=st.sampled_from(("flip", "cut", "insert")),
       at=st.integers(0, 1 << 16), junk=st.binary(min_size=1, max_size=40))
def test_a_changed_log_file_is_a_verdict_never_a_crash(capsys: pytest.CaptureFixture[str], logged: Any,
                                                       target: str, how: str, at: int, junk: bytes) -> None:
    log, vkey, archive, files = logged
    path = files[target]
    original = path.read_bytes()
    changed = _mutate(original, how, at, junk)
    proof_before = files["proof"].read_bytes()
    path.write_bytes(changed)
    try:
        code = main(["--log", str(log), "--log-key", str(vkey), "--complete", str(archive), "-j", "1", "--json"])
        out = capsys.readouterr()
        receipt = str(files["proof"].with_suffix(".json"))
        alone_code = main([receipt, "--log-key", str(vkey), "--json"])  # the receipt's own proof, no log walked
        alone_out = capsys.readouterr()
        prove_code = aer1_main(["log", "prove", str(log), receipt, "--json"])  # the writer reads the same files
        prove_out = capsys.readouterr()
    finally:
        path.write_bytes(original)
        files["proof"].write_bytes(proof_before)
    prove_doc = json.loads(prove_out.out)
    assert prove_code in (0, 2) and prove_doc["exit_code"] == prove_code, prove_doc
    assert "internal error" not in prove_out.out + prove_out.err
    doc = json.loads(out.out)
    assert code in (0, 1, 2) and doc["exit_code"] == code
    assert "internal error" not in out.out + out.err and "Traceback" not in out.err
    if changed != original and target in ("tile", "bundle"):
        assert code != 0, (target, how, at)
    if how == "cut" and changed != original and target == "checkpoint":
        assert code != 0, (target, how, at)
    alone = json.loads(alone_out.out)
    assert alone_code in (0, 1, 2) and alone["exit_code"] == alone_code
    assert "internal error" not in alone_out.out + alone_out.err
    if how == "cut" and changed != original and target == "proof":
        assert alone_code != 0, (target, how, at)
