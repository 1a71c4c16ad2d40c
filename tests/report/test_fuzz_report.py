"""Fuzzing ``aer1 report`` and ``aer1 show --json``: no receipt or evidence gives a traceback.

The mutations and the command contract are the verifier fuzz suite's; here every mutated
pair is also rendered (one receipt, and the folder as an archive) and shown as JSON.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from aer1._cli import main as aer1_main
from tests.verifier.test_fuzz_cli import _FUZZ, _check, _files, honest, mutated_pair

__all__ = ["honest"]  # the fixture, shared with the verifier's fuzz suite


@_FUZZ
@given(data=st.data())
def test_fuzzed_receipts_render_and_show(honest: dict[str, bytes], data: st.DataObject) -> None:
    receipt, evidence = mutated_pair(honest, data)
    with _files(r_json=receipt, r_evidence_jsonl=evidence) as folder:
        path, out = folder / "r.json", Path(folder) / "out"
        out.mkdir()
        code, _, _ = _check(aer1_main, ["report", str(path), "-o", str(out / "r.html")])
        assert code == 2 or (out / "r.html").stat().st_size > 0, "got no page for a receipt that was read"
        _check(aer1_main, ["report", str(folder), "-o", str(out / "index.html")])
        _check(aer1_main, ["show", "--json", str(path)])
