"""A disclosed child: a child receipt with the proof of its parent's link step, no parent.

``aer1-verify --bundle DIR`` on a folder holding the child (with its own descendants, if
any) and one ``*.proof.json`` made by ``aer1 prove`` on the parent: the proof roots the
tree, its root pinned by ``--expected-root`` or by a trusted signed parent (``--receipt``
with ``--key``), and the link it proves must bind exactly this child. Every swap is
refused (exit 2) or INVALID (exit 1), never VALID.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from aer1._cli import main as aer1_cli
from aer1._signing import generate_key_pair, key_id, load_public_key

from .helpers import edit_json, tree, verify_bundle_cli, verify_bundle_text


def _link_seqs(receipt: dict[str, Any]) -> dict[str, int]:
    """Child workflow_id -> seq of the link step binding it."""
    return {s["target"]: s["seq"] for s in receipt["steps"] if s["kind"] == "link"}


def _prove(parent: str, seq: int, out: Path) -> Path:
    """``aer1 prove PARENT --step SEQ -o OUT`` (the parent's evidence beside it)."""
    with contextlib.redirect_stdout(io.StringIO()):
        assert aer1_cli(["prove", parent, "--step", str(seq), "-o", str(out)]) == 0
    return out


def _disclose(paths: list[str], receipt: dict[str, Any], child: int, folder: Path, *, seq: int | None = None,
              with_descendants: bool = True) -> Path:
    """A folder with the child ``paths[child]`` (and the grandchild of child A) and the proof of a link step."""
    folder.mkdir()
    chosen = [paths[child]] + ([paths[2]] if child == 1 and with_descendants else [])
    for path in chosen:
        shutil.copy(path, folder)
        evidence = Path(path).with_suffix(".evidence.jsonl")
        if evidence.exists():
            shutil.copy(evidence, folder)
    wid = json.loads(Path(paths[child]).read_text())["workflow_id"]
    _prove(paths[0], seq if seq is not None else _link_seqs(receipt)[wid], folder / "link.proof.json")
    return folder


def _assert_invalid(folder: Path, root: str, reason: str) -> None:
    """``aer1-verify --bundle FOLDER --expected-root ROOT`` is INVALID, a failure saying ``reason``."""
    code, doc = verify_bundle_cli(str(folder), "--expected-root", root)
    assert (code, doc["verdict"]) == (1, "INVALID"), doc
    assert any(reason in f for f in doc["failures"]), f"got failures {doc['failures']}, want one saying {reason!r}"


@pytest.fixture
def bundle(tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
    """parent -> (A -> grandchild, B), saved; the parent's evidence beside it."""
    _, receipt, paths = tree(tmp_path / "full")
    return receipt, paths


def test_disclosed_child_with_pinned_root_is_valid(tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    receipt, paths = bundle
    folder = _disclose(paths, receipt, 1, tmp_path / "disclosed")
    code, doc = verify_bundle_cli(str(folder), "--expected-root", receipt["merkle_root"])
    assert code == 0, doc["failures"]
    assert doc["root_kind"] == "proof" and doc["root_report"]["verdict"] == "VALID"
    assert (doc["links"]["followed"], doc["links"]["not_followed"]) == (2, 0)  # the link, the grandchild's
    assert doc["tree"]["links"][0]["child"]["workflow_id"] == json.loads(Path(paths[1]).read_text())["workflow_id"]
    assert "root pinned by --expected-root" in doc["basis"]
    code, out, _ = verify_bundle_text(str(folder), "--expected-root", receipt["merkle_root"])
    assert code == 0 and "verdict: VALID" in out and "link.proof.json" in out


def test_leaf_child_alone_is_valid(tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    receipt, paths = bundle
    folder = _disclose(paths, receipt, 3, tmp_path / "disclosed")
    code, doc = verify_bundle_cli(str(folder), "--expected-root", receipt["merkle_root"])
    assert code == 0, doc["failures"]
    assert doc["links"]["followed"] == 1


def test_root_not_pinned_is_invalid(tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    receipt, paths = bundle
    folder = _disclose(paths, receipt, 3, tmp_path / "disclosed")
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1 and doc["verdict"] == "INVALID"
    assert "root not pinned" in doc["failures"][0]


def test_wrong_expected_root_is_invalid(tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    receipt, paths = bundle
    folder = _disclose(paths, receipt, 3, tmp_path / "disclosed")
    _assert_invalid(folder, "ab" * 32, "merkle_root differs from the expected root")


def test_swapped_child_is_invalid(tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    """The proof binds child B; child A stands in the folder instead."""
    receipt, paths = bundle
    b_seq = _link_seqs(receipt)[json.loads(Path(paths[3]).read_text())["workflow_id"]]
    folder = _disclose(paths, receipt, 1, tmp_path / "disclosed", seq=b_seq, with_descendants=False)
    _assert_invalid(folder, receipt["merkle_root"], "is not in the bundle")
    _assert_invalid(folder, receipt["merkle_root"], "is not linked from the proof's tree")


def test_child_with_the_target_workflow_id_but_other_content_is_invalid(
        tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    """Child A's receipt relabelled with child B's workflow_id: the link hash tells them apart."""
    receipt, paths = bundle
    folder = _disclose(paths, receipt, 3, tmp_path / "disclosed")
    b_file = next(p for p in folder.iterdir() if p.name.endswith(".json") and not p.name.endswith(".proof.json"))
    b_id = json.loads(b_file.read_text())["workflow_id"]
    b_file.unlink()
    Path(str(b_file).replace(".json", ".evidence.jsonl")).unlink()
    forged = tree(tmp_path / "other")[2][3]  # another run's child B: valid on its own
    shutil.copy(forged, b_file)

    def relabel(doc: dict[str, Any]) -> None:
        doc["workflow_id"] = b_id

    edit_json(b_file, relabel)  # no longer verifies on its own either
    _assert_invalid(folder, receipt["merkle_root"], "does not verify: chain: step 1: prev_digest")


def test_valid_foreign_child_under_the_same_id_does_not_match(
        tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    """A valid child whose workflow_id equals the target but whose chain differs: hash mismatch."""
    from aer1 import Collector

    receipt, paths = bundle
    b = json.loads(Path(paths[3]).read_text())
    folder = _disclose(paths, receipt, 3, tmp_path / "disclosed")
    for p in folder.iterdir():
        if not p.name.endswith(".proof.json"):
            p.unlink()
    impostor = Collector(goal="pricing", _ids=(b["workflow_id"], b["receipt_id"]))
    impostor.record("search", {"result": "other"}, agent="worker")
    impostor.save(folder / "impostor.json", workflow=impostor.finalize())
    _assert_invalid(folder, receipt["merkle_root"], "does not match its link")


def test_proof_of_another_step_is_invalid(tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    receipt, paths = bundle
    folder = _disclose(paths, receipt, 3, tmp_path / "disclosed", seq=1)  # step 1: the task
    _assert_invalid(folder, receipt["merkle_root"], "not a link step")


def test_proof_with_its_link_step_edited_is_invalid(tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    """The proof's step retargeted at the other child: its id no longer derives from its members."""
    receipt, paths = bundle
    folder = _disclose(paths, receipt, 3, tmp_path / "disclosed")
    a_id = json.loads(Path(paths[1]).read_text())["workflow_id"]
    shutil.copy(paths[1], folder)

    def retarget(doc: dict[str, Any]) -> None:
        doc["step"]["target"] = a_id

    edit_json(folder / "link.proof.json", retarget)
    _assert_invalid(folder, receipt["merkle_root"], "receipt_id is not derived from the step's digest")


def test_proof_from_another_parent_is_invalid(tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    """The proof of another tree's link, under this tree's pinned root."""
    receipt, _ = bundle
    _, other_receipt, other_paths = tree(tmp_path / "other")
    folder = _disclose(other_paths, other_receipt, 3, tmp_path / "disclosed")
    _assert_invalid(folder, receipt["merkle_root"], "merkle_root differs")


def test_missing_child_is_invalid(tmp_path: Path, bundle: tuple[dict[str, Any], list[str]]) -> None:
    receipt, paths = bundle
    folder = _disclose(paths, receipt, 1, tmp_path / "disclosed")
    for name in [p.name for p in folder.iterdir()]:
        if name.startswith(json.loads(Path(paths[1]).read_text())["workflow_id"]):
            (folder / name).unlink()
    _assert_invalid(folder, receipt["merkle_root"], "is not in the bundle")


def test_two_proofs_and_misplaced_options_are_refused(tmp_path: Path,
                                                      bundle: tuple[dict[str, Any], list[str]]) -> None:
    receipt, paths = bundle
    folder = _disclose(paths, receipt, 3, tmp_path / "disclosed")
    root = receipt["merkle_root"]
    for extra, want in ((["--expected-head", "00" * 32], "--expected-head cannot apply to a disclosed child"),
                        (["--key", str(paths[0])], None)):
        code, out, err = verify_bundle_text(str(folder), "--expected-root", root, *extra)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (out, err)
        if want:
            assert want in err
    shutil.copy(folder / "link.proof.json", folder / "again.proof.json")
    code, out, err = verify_bundle_text(str(folder), "--expected-root", root)
    assert code == 2 and "2 proofs" in err
    code, out, err = verify_bundle_text(str(Path(paths[0]).parent), "--receipt", paths[0])
    assert code == 2 and "holds no *.proof.json" in err


def test_trusted_signed_parent_pins_the_root(tmp_path: Path) -> None:
    private, public = generate_key_pair()
    key_file = tmp_path / "ops.pub"
    key_file.write_bytes(public)
    _, receipt, paths = tree(tmp_path / "full", signing_key=private)
    folder = _disclose(paths, receipt, 3, tmp_path / "disclosed")
    code, doc = verify_bundle_cli(str(folder), "--receipt", paths[0], "--key", str(key_file))
    assert code == 0, doc["failures"]
    assert f"receipt signed by trusted key {key_id(load_public_key(public))}" in doc["basis"]

    _, other_public = generate_key_pair()
    other = tmp_path / "other.pub"
    other.write_bytes(other_public)
    code, doc = verify_bundle_cli(str(folder), "--receipt", paths[0], "--key", str(other))
    assert code == 1 and "the pinning receipt" in doc["failures"][0]
    _, _, other_paths = tree(tmp_path / "other-tree", signing_key=private)
    code, doc = verify_bundle_cli(str(folder), "--receipt", other_paths[0], "--key", str(key_file))
    assert code == 1 and "merkle_root differs from the expected root" in doc["failures"][0], doc


@pytest.mark.parametrize(("write", "reason"), [
    (lambda p: p.write_text("{not json"), "is unreadable"),
    (lambda p: p.mkdir(), "is unreadable"),
    (lambda p: p.write_text("[1, 2]"), "not an inclusion proof"),
])
def test_broken_proof_is_invalid_and_the_child_unreached(tmp_path: Path, bundle: tuple[dict[str, Any], list[str]],
                                                         write: Any, reason: str) -> None:
    receipt, paths = bundle
    folder = _disclose(paths, receipt, 3, tmp_path / "disclosed")
    (folder / "link.proof.json").unlink()
    write(folder / "link.proof.json")
    _assert_invalid(folder, receipt["merkle_root"], reason)
    _assert_invalid(folder, receipt["merkle_root"], "is not linked from the proof's tree")
    code, out, err = verify_bundle_text(str(folder), "--expected-root", receipt["merkle_root"])
    assert code == 1 and "Traceback" not in out + err and "verdict: INVALID" in out
