"""``aer1-verify --bundle``: a parent and its children as one tree, against an attacker.

Each attack is applied to a saved bundle of a parent, two children and a grandchild:
a child missing (the tree still verifies; the verdict names the link not followed), a
child edited, a child rebuilt under the same workflow_id, a child swapped for another
run's, a link step edited, an extra receipt, two receipts with one workflow_id.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1._link import LINK_KIND, link_content, link_hash

from .helpers import child_run, edit_json, tree, verify_bundle_cli, verify_bundle_text


@pytest.fixture
def bundle(tmp_path: Path) -> tuple[Path, list[str], dict[str, Any]]:
    """A saved tree: parent -> (A -> grandchild, B); returns (folder, paths, parent receipt)."""
    folder = tmp_path / "bundle"
    _, receipt, paths = tree(folder)
    return folder, paths, receipt


def _ids(paths: list[str]) -> list[str]:
    return [json.loads(Path(p).read_text())["workflow_id"] for p in paths]


def test_whole_tree_verifies_and_is_reported(bundle: tuple[Path, list[str], dict[str, Any]]) -> None:
    folder, paths, _ = bundle
    code, doc = verify_bundle_cli(str(folder))
    assert code == 0, doc["failures"]
    assert doc["links"]["total"] == 3 and doc["links"]["followed"] == 3 and doc["links"]["not_followed"] == 0
    root, a, grand, b = _ids(paths)
    tree_ = doc["tree"]
    assert tree_["workflow_id"] == root
    assert [link["target"] for link in tree_["links"]] == [a, b]
    assert tree_["links"][0]["child"]["links"][0]["target"] == grand
    code, text, _ = verify_bundle_text(str(folder))
    assert code == 0
    assert f"step 2 link -> {a}: followed" in text and f"step 3 link -> {b}: followed" in text
    assert "3 links, 3 followed" in text.splitlines()[-1]


@pytest.mark.parametrize("which", [1, 2, 3])
def test_child_missing_parent_still_verifies_and_the_verdict_names_the_link(
    bundle: tuple[Path, list[str], dict[str, Any]], which: int
) -> None:
    folder, paths, _ = bundle
    ids = _ids(paths)
    Path(paths[which]).unlink()
    Path(paths[which]).with_suffix(".evidence.jsonl").unlink()
    code, doc = verify_bundle_cli(str(folder))
    missing = doc["links"]["not_followed_links"]
    if which == 1:  # child A gone: its grandchild hangs from nothing in the tree
        assert code == 1
        assert any("is not linked from the root's tree" in f for f in doc["failures"]), doc["failures"]
        return
    assert code == 0, doc["failures"]
    assert [m["target"] for m in missing] == [ids[which]]
    assert "NOT FOLLOWED" in doc["basis"] and ids[which] in doc["basis"]
    code, text, _ = verify_bundle_text(str(folder))
    assert code == 0 and f"-> {ids[which]}: not followed: the child is not in the bundle" in text


def test_child_and_its_subtree_missing_is_one_link_not_followed(
    bundle: tuple[Path, list[str], dict[str, Any]]
) -> None:
    folder, paths, _ = bundle
    for p in paths[1:3]:
        Path(p).unlink()
    code, doc = verify_bundle_cli(str(folder))
    assert code == 0, doc["failures"]
    assert (doc["links"]["followed"], doc["links"]["not_followed"]) == (1, 1)


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("member", ["goal", "status", "output_hash"])
def test_child_edited(bundle: tuple[Path, list[str], dict[str, Any]], member: str) -> None:
    folder, paths, _ = bundle
    values = {"goal": "other", "status": "error", "output_hash": "0" * 64}
    edit_json(paths[3], lambda d: d.__setitem__(member, values[member]))
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1
    assert "does not verify" in doc["failures"][0] and "step 3 of" in doc["failures"][0], doc["failures"]


@pytest.mark.unverified_receipts
def test_child_evidence_edited(bundle: tuple[Path, list[str], dict[str, Any]]) -> None:
    folder, paths, _ = bundle
    ev = Path(paths[2]).with_suffix(".evidence.jsonl")
    ev.write_bytes(ev.read_bytes().replace(b"found 0", b"found 7"))
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1
    assert "evidence" in doc["failures"][0], doc["failures"]


def test_child_rebuilt_under_the_same_workflow_id_does_not_match_its_link(
    bundle: tuple[Path, list[str], dict[str, Any]]
) -> None:
    """A valid receipt with the child's ids but other steps: it verifies alone, not as the child."""
    folder, paths, _ = bundle
    original = json.loads(Path(paths[3]).read_text())
    forged = child_run("pricing", steps=3, _ids=(original["workflow_id"], original["receipt_id"]))
    forged.save(paths[3], forged.finalize())
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1
    assert "does not match its link" in doc["failures"][0], doc["failures"]


def test_child_swapped_for_another_runs_child(bundle: tuple[Path, list[str], dict[str, Any]], tmp_path: Path) -> None:
    folder, paths, _ = bundle
    other = tmp_path / "other"
    _, _, other_paths = tree(other)
    Path(paths[3]).unlink()
    Path(paths[3]).with_suffix(".evidence.jsonl").unlink()
    shutil.copy(other_paths[3], folder / "b.json")
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1
    assert "b.json" in doc["failures"][0] and "is not linked from the root's tree" in doc["failures"][0], doc
    assert doc["links"]["not_followed_links"][0]["seq"] == 3


@pytest.mark.unverified_receipts
@pytest.mark.parametrize(("member", "value"), [("target", "00000000-0000-4000-8000-000000000000"),
                                               ("receipt_hash", "1" * 64), ("status", "error")])
def test_link_step_edited(bundle: tuple[Path, list[str], dict[str, Any]], member: str, value: str) -> None:
    folder, paths, _ = bundle
    edit_json(paths[0], lambda d: d["steps"][1].__setitem__(member, value))
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1
    assert "receipt.json does not verify" in doc["failures"][0], doc["failures"]


def test_extra_unlinked_receipt(bundle: tuple[Path, list[str], dict[str, Any]]) -> None:
    folder, _, _ = bundle
    stray = child_run("stray")
    stray.save(folder / "stray.json", stray.finalize())
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1
    assert "stray.json" in doc["failures"][0] and "not linked from the root's tree" in doc["failures"][0], doc


def test_without_receipt_json_the_root_is_the_one_unlinked_receipt(
    bundle: tuple[Path, list[str], dict[str, Any]]
) -> None:
    folder, paths, _ = bundle
    Path(paths[0]).rename(folder / "parent.json")
    Path(paths[0]).with_suffix(".evidence.jsonl").rename(folder / "parent.evidence.jsonl")
    code, doc = verify_bundle_cli(str(folder))
    assert code == 0 and doc["root"].endswith("parent.json"), doc["failures"]
    stray = child_run("stray")
    stray.save(folder / "stray.json", stray.finalize())
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1
    assert doc["failures"][0].startswith("no receipt.json, and not exactly one receipt linked from no other; "
                                         "found 2"), doc["failures"]


def test_two_receipts_with_one_workflow_id(bundle: tuple[Path, list[str], dict[str, Any]]) -> None:
    folder, paths, _ = bundle
    shutil.copy(paths[3], folder / "copy.json")
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1
    assert any("share workflow_id" in f for f in doc["failures"]), doc["failures"]


def test_a_receipt_linked_twice_in_the_tree_fails(tmp_path: Path) -> None:
    """Two parents in one bundle both claiming the same child (the collector refuses to link it so)."""
    child = child_run("shared").finalize()
    a, b = Collector(goal="a"), Collector(goal="b")
    a.link(child)
    b.link(child)
    b_receipt = b.finalize()
    root = Collector(goal="root")
    root.link(a)
    root.record(LINK_KIND, link_content(b_receipt), kind=LINK_KIND, target=b.workflow_id)  # what link() refuses
    folder = tmp_path / "bundle"
    root.save_bundle(folder, root.finalize())
    b.save(folder / f"{b.workflow_id}.json", workflow=b_receipt)
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1
    assert any("linked more than once" in f for f in doc["failures"]), doc["failures"]


@pytest.mark.unverified_receipts
def test_unreadable_receipt_in_the_bundle(bundle: tuple[Path, list[str], dict[str, Any]]) -> None:
    folder, _, _ = bundle
    (folder / "junk.json").write_bytes(b"{\xff")
    code, doc = verify_bundle_cli(str(folder))
    assert code == 2 and doc["verdict"] == "MALFORMED"  # an unreadable file: exit 2, as for any other path
    assert any("junk.json: unreadable" in f for f in doc["failures"]), doc["failures"]


def test_link_hash_is_what_the_parent_recorded(bundle: tuple[Path, list[str], dict[str, Any]]) -> None:
    """The link content is recomputable from the child alone: the parent's evidence holds the same."""
    _, paths, receipt = bundle
    evidence = Path(paths[0]).with_suffix(".evidence.jsonl").read_text().splitlines()
    line = json.loads(evidence[2])
    assert line["seq"] == 2 and line["receipt_hash"] == receipt["steps"][1]["receipt_hash"]
    assert link_hash(line["content"]) == receipt["steps"][1]["receipt_hash"]


def test_trusted_key_required_of_the_root(bundle: tuple[Path, list[str], dict[str, Any]], tmp_path: Path) -> None:
    from aer1._signing import generate_key_pair

    folder, _, _ = bundle
    _, public = generate_key_pair()
    (tmp_path / "k.pub").write_bytes(public)
    code, doc = verify_bundle_cli(str(folder), "--key", str(tmp_path / "k.pub"))
    assert code == 1
    assert "not signed, but a trusted key was required" in doc["failures"][0], doc["failures"]


@pytest.mark.parametrize(("args", "why"), [
    (["nowhere"], "No such file"),
    (["FILE"], "not a folder"),
    (["EMPTY"], "no *.json receipts"),
    (["A", "B"], "exactly one folder"),
    (["-"], "exactly one folder"),
    (["DIR", "--evidence", "FILE"], "--evidence cannot apply to a bundle"),
    (["DIR", "--proof"], "--proof cannot apply to a bundle"),
    (["DIR", "--expected-root", "xyz"], "--expected-root must be 64 hex characters"),
])
def test_usage_errors_are_one_line(tmp_path: Path, args: list[str], why: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "f.json").write_text("{}")
    names = {"FILE": str(tmp_path / "f.json"), "EMPTY": str(tmp_path / "empty"), "DIR": str(tmp_path / "empty"),
             "A": str(tmp_path), "B": str(tmp_path)}
    argv = [names.get(a, a) for a in args]
    code, out, err = verify_bundle_text(*argv)
    assert code == 2 and out == ""
    assert why in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    code, doc = verify_bundle_cli(*argv)
    assert code == 2 and doc["verdict"] == "MALFORMED" and why in json.dumps(doc)


def test_parallel_verification_gives_the_same_report(
    bundle: tuple[Path, list[str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large bundles are verified in a process pool: same verdict, tree and reports as in one process."""
    from aer1.verifier import _bundle, verify_bundle

    folder, paths, _ = bundle
    Path(paths[3]).unlink()  # one link not followed, so the comparison covers that too
    serial = verify_bundle(folder, jobs=1).to_dict()
    pools: list[int] = []

    class CountedPool(ProcessPoolExecutor):
        def __init__(self, max_workers: int, **options: Any) -> None:
            pools.append(max_workers)
            super().__init__(max_workers, **options)

    monkeypatch.setattr(_bundle, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(_bundle, "ProcessPoolExecutor", CountedPool)
    parallel = verify_bundle(folder, jobs=2).to_dict()
    assert pools == [2], "the bundle was not verified in a pool"
    assert parallel == serial
    assert serial["links"]["not_followed"] == 1


def test_a_tree_deeper_than_the_limit_fails_without_a_traceback(tmp_path: Path) -> None:
    from aer1.verifier._bundle import MAX_LINK_DEPTH

    child: Collector | None = None
    for depth in range(MAX_LINK_DEPTH + 1, -1, -1):
        c = Collector(goal=f"level {depth}", evidence=False)
        if child is not None:
            c.link(child)
        child = c
    assert child is not None
    folder = tmp_path / "deep"
    child.save_bundle(folder, child.finalize())
    code, doc = verify_bundle_cli(str(folder))
    assert code == 1
    assert any(f"deeper than {MAX_LINK_DEPTH} links" in f for f in doc["failures"]), doc["failures"][:3]
    code, text, err = verify_bundle_text(str(folder))
    assert code == 1 and err == "" and "deeper than" in text


def test_verdict_counts_children_whose_evidence_was_checked(
    bundle: tuple[Path, list[str], dict[str, Any]]
) -> None:
    folder, paths, _ = bundle
    Path(paths[3]).with_suffix(".evidence.jsonl").unlink()
    code, doc = verify_bundle_cli(str(folder))
    assert code == 0, doc["failures"]
    assert "children's evidence checked for 2 of 3" in doc["basis"]


@pytest.mark.unverified_receipts
def test_signed_root_protects_the_tree_against_a_rechained_parent(tmp_path: Path) -> None:
    """Without a key, a parent can be rewritten to link a forged child; a trusted signature stops it."""
    from aer1._canonical import exact_bytes
    from aer1._chain import step_digest_hex, uuid8_from_hex
    from aer1._link import link_content
    from aer1._merkle import merkle_root_hex
    from aer1._receipt import close_content
    from aer1._signing import generate_key_pair

    private, public = generate_key_pair()
    (tmp_path / "k.pub").write_bytes(public)
    folder = tmp_path / "bundle"
    _, receipt, paths = tree(folder, signing_key=private)
    assert verify_bundle_cli(str(folder), "--key", str(tmp_path / "k.pub"))[0] == 0

    # The attacker replaces child B by a run of their own and re-chains the parent to match.
    forged = child_run("pricing, forged", steps=3)
    Path(paths[3]).unlink()
    Path(paths[3]).with_suffix(".evidence.jsonl").unlink()
    forged_receipt = forged.finalize()
    forged.save(folder / "forged.json", forged_receipt)
    parent = json.loads(Path(paths[0]).read_text())
    Path(paths[0]).with_suffix(".evidence.jsonl").unlink()
    parent.pop("signature")
    link = parent["steps"][2]
    link["target"], link["receipt_hash"] = forged_receipt["workflow_id"], link_hash(link_content(forged_receipt))
    prev = link["prev_digest"]
    for step in parent["steps"][2:]:
        step["prev_digest"] = prev
        if step["kind"] == "close":
            step["receipt_hash"] = hashlib.sha256(exact_bytes(close_content(parent, len(parent["steps"])))).hexdigest()
        prev = step_digest_hex(step, flat=True)
        step["receipt_id"] = uuid8_from_hex(prev)
    parent["chain_head"] = prev
    parent["merkle_root"] = merkle_root_hex([s["receipt_id"] for s in parent["steps"]])
    Path(paths[0]).write_text(json.dumps(parent))

    code, doc = verify_bundle_cli(str(folder))
    assert code == 0, doc["failures"]  # consistent: only a key or a pinned root can tell
    code, doc = verify_bundle_cli(str(folder), "--key", str(tmp_path / "k.pub"))
    assert code == 1
    assert "not signed, but a trusted key was required" in doc["failures"][0], doc["failures"]
    code, doc = verify_bundle_cli(str(folder), "--expected-root", receipt["merkle_root"])
    assert code == 1
    assert "merkle_root differs from the expected root" in doc["failures"][0], doc["failures"]
