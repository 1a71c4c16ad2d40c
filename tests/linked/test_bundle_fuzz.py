"""Fuzzing ``aer1-verify --bundle``: no edit of any file of a bundle gives a traceback.

Each example takes an honest saved tree, applies one edit to one file (a byte flipped,
cut, a JSON member replaced by another value, a file emptied or removed), and runs the
verifier in text and JSON form: exit 0, 1 or 2, JSON stays JSON, nothing on standard
error but one line, never the last-resort "internal error". An edit of a receipt never
leaves the verdict VALID unless that receipt was dropped from the tree (a removed child is
a link not followed, and that is what the verdict must say). Evidence edits are only held
to "no traceback" here: check 7 compares each line's content with its step, not the line's
own copy of ``receipt_hash`` (spec/evidence.md).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aer1.verifier._cli import main as verify_main

from .helpers import tree

_FUZZ = settings(max_examples=int(os.environ.get("AER1_FUZZ_EXAMPLES", "60")), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=40), st.lists(st.integers(), max_size=3),
                    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("honest") / "bundle"
    tree(folder)
    return folder


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = verify_main(argv)
    return code, out.getvalue(), err.getvalue()


def _edit_member(doc: Any, path: list[int], value: Any) -> None:
    """Replace one member found by walking ``path`` (indexes into sorted keys / list items)."""
    node = doc
    for i, step in enumerate(path):
        keys: list[Any] = sorted(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return
        key = keys[step % len(keys)]
        if i == len(path) - 1 or not isinstance(node[key], (dict, list)):
            node[key] = value
            return
        node = node[key]


@_FUZZ
@given(which=st.integers(min_value=0), how=st.sampled_from(["flip", "cut", "member", "empty", "remove"]),
       where=st.integers(min_value=0), path=st.lists(st.integers(min_value=0), min_size=1, max_size=4),
       value=_VALUES)
def test_no_edit_gives_a_traceback(honest: Path, tmp_path: Path, which: int, how: str, where: int,
                                   path: list[int], value: Any) -> None:
    folder = Path(tempfile.mkdtemp(dir=tmp_path)) / "bundle"  # one per example: tmp_path is shared
    shutil.copytree(honest, folder)
    files = sorted(folder.iterdir())
    target = files[which % len(files)]
    data = target.read_bytes()
    if how == "flip":
        i = where % len(data)
        target.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
    elif how == "cut":
        target.write_bytes(data[: where % len(data)])
    elif how == "member" and target.suffix == ".json":
        doc = json.loads(data)
        _edit_member(doc, path, value)
        target.write_text(json.dumps(doc))
    elif how == "empty":
        target.write_bytes(b"")
    elif how == "remove":
        target.unlink()
    changed = not target.exists() or target.read_bytes() != data

    code, out, err = _run(["--bundle", "--json", str(folder)])
    assert code in (0, 1, 2) and err == "", err
    doc = json.loads(out)
    assert "internal error" not in json.dumps(doc)
    if code == 0 and changed and target.name.endswith(".json"):
        # Only a removal leaves the tree valid: the removed child's link is then not followed.
        assert how == "remove", (how, target.name)
        assert doc["links"]["not_followed"] == 1, doc["links"]
    code_text, out_text, err_text = _run(["--bundle", str(folder)])
    assert code_text == code
    assert "Traceback" not in out_text + err_text and len(err_text.splitlines()) <= 1
