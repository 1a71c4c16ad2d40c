"""The link step: what ``Collector.link`` records, and what it refuses to link."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from aer1 import Collector
from aer1._link import LINK_KIND, LinkError, link_content, link_hash
from aer1._recover import recover_journal
from aer1._signing import generate_key_pair, key_id, load_public_key
from aer1.verifier import verify_receipt

from .helpers import child_run, verify_bundle_cli


def test_link_step_binds_the_child_members() -> None:
    child = child_run("research")
    receipt = child.finalize(final_answer="three sources")
    parent = Collector(goal="plan")
    step = parent.link(receipt, agent="research-team")
    assert (step["kind"], step["tool"], step["agent"], step["status"]) == (LINK_KIND, LINK_KIND, "research-team", "ok")
    assert step["target"] == receipt["workflow_id"]
    content = link_content(receipt)
    assert content == {"link": "aer1-link-v1", "workflow_id": receipt["workflow_id"],
                       "receipt_id": receipt["receipt_id"], "merkle_root": receipt["merkle_root"],
                       "chain_head": receipt["chain_head"], "status": "ok", "step_count": 3}
    assert step["receipt_hash"] == link_hash(content)
    assert parent.verify(parent.finalize()) == []


def test_signed_child_link_commits_to_its_key(tmp_path: Path) -> None:
    private, public = generate_key_pair()
    child = child_run("research", signing_key=private)
    receipt = child.finalize()
    assert link_content(receipt)["key_id"] == key_id(load_public_key(public))
    parent = Collector(goal="plan", signing_key=private)
    parent.link(child)
    folder = tmp_path / "bundle"
    parent.save_bundle(folder, parent.finalize())
    (tmp_path / "ops.pub").write_bytes(public)
    code, doc = verify_bundle_cli(str(folder), "--key", str(tmp_path / "ops.pub"))
    assert code == 0, doc["failures"]
    assert "signed by trusted key" in doc["basis"]


def test_child_sent_as_bytes_with_its_evidence(tmp_path: Path) -> None:
    """A worker on another machine sends its receipt and evidence as bytes: no shared disk."""
    child = child_run("remote worker")
    (tmp_path / "worker").mkdir()
    saved = Path(child.save(tmp_path / "worker" / "r.json"))
    receipt_bytes = saved.read_bytes()
    evidence_bytes = saved.with_name("r.evidence.jsonl").read_bytes()
    parent = Collector(goal="plan")
    parent.link(receipt_bytes, evidence=evidence_bytes, agent="worker-1")
    folder = tmp_path / "bundle"
    paths = parent.save_bundle(folder, parent.finalize())
    code, doc = verify_bundle_cli(str(folder))
    assert code == 0, doc["failures"]
    child_report = next(r for r in doc["receipts"] if r["source"] == paths[1])
    assert child_report["basis"]["evidence"] == "checked"


@pytest.mark.unverified_receipts
def test_a_child_that_does_not_verify_is_refused() -> None:
    receipt = child_run("research").finalize()
    receipt["goal"] = "something else"  # the close step no longer matches
    parent = Collector(goal="plan")
    with pytest.raises(LinkError, match="does not verify: chain: step 3: close step does not match"):
        parent.link(receipt)
    assert parent.step_count == 0 and parent.linked_children == {}


@pytest.mark.unverified_receipts
def test_a_child_whose_evidence_does_not_match_is_refused(tmp_path: Path) -> None:
    child = child_run("research")
    saved = Path(child.save(tmp_path / "r.json"))
    evidence = saved.with_name("r.evidence.jsonl").read_bytes().replace(b"found 0", b"found 9")
    with pytest.raises(LinkError, match="evidence"):
        Collector(goal="plan").link(saved.read_bytes(), evidence=evidence)


@pytest.mark.parametrize(("child", "why"), [
    (b"{not json", "the child receipt"),
    (b"[1, 2]", "not an object"),
    (b'{"a": 1, "a": 2}', "duplicate"),
    ({"type": "verifiable-workflow-receipt", "steps": []}, "only aer1-chain-v1 receipts"),
])
def test_what_is_not_a_receipt_is_refused(child: object, why: str) -> None:
    parent = Collector(goal="plan")
    with pytest.raises(LinkError, match=why):
        parent.link(child)
    assert parent.step_count == 0


def test_linking_the_same_child_twice_is_refused() -> None:
    receipt = child_run("research").finalize()
    parent = Collector(goal="plan")
    parent.link(receipt)
    with pytest.raises(LinkError, match="already linked"):
        parent.link(receipt)
    assert parent.step_count == 1


def test_a_child_recovered_from_a_journal_makes_its_link_an_error(tmp_path: Path) -> None:
    """A run that died (its journal recovered) is marked incomplete, and its link says so."""
    worker = Collector(goal="worker", journal=tmp_path / "w.journal")
    worker.record("search", {"q": "x"}, agent="worker")
    worker.journal.close()  # type: ignore[union-attr]  # the process dies here: no finalize
    recover_journal(tmp_path / "w.journal", tmp_path / "w.json")
    data = (tmp_path / "w.json").read_bytes()
    parent = Collector(goal="plan")
    step = parent.link(data, evidence=(tmp_path / "w.evidence.jsonl").read_bytes(), agent="worker-1")
    assert step["status"] == "error"
    content = link_content(orjson.loads(data))
    assert (content["status"], content["closed_by"]) == ("incomplete", "recovery")
    receipt = parent.finalize()
    assert receipt["status"] == "ok"  # the failed child is its link step's error, not the parent run's (steps.md)
    folder = tmp_path / "bundle"
    parent.save_bundle(folder, receipt)
    code, doc = verify_bundle_cli(str(folder))
    assert code == 0, doc["failures"]
    link = doc["tree"]["links"][0]
    assert link["result"] == "followed" and "closed by recovery" in link["detail"]
    assert link["child"]["status"] == "incomplete" and link["child"]["closed_by"] == "recovery"


def test_single_receipt_verification_says_links_were_not_followed(tmp_path: Path) -> None:
    parent = Collector(goal="plan")
    parent.link(child_run("research").finalize())
    path = parent.save(tmp_path / "p.json")
    report = verify_receipt(path)
    assert report.valid
    assert any("1 link step(s)" in n and "--bundle" in n for n in report.notes), report.notes
    assert json.loads(Path(path).read_text())["steps"][0]["kind"] == "link"


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("target", [None, "", "not-a-uuid", "5EE854AD-E8F8-4969-A9E9-6B3004E79381"])
def test_a_link_step_without_a_child_workflow_id_fails_members(target: str | None) -> None:
    """Even a producer that re-chains correctly cannot emit a link that names no child."""
    from aer1._chain import step_digest_hex, uuid8_from_hex

    parent = Collector(goal="plan", _ids=("11111111-1111-4111-8111-111111111111",
                                          "22222222-2222-4222-8222-222222222222"))
    parent.link(child_run("research").finalize())
    receipt = parent.finalize()
    step = receipt["steps"][0]
    if target is None:
        del step["target"]
    else:
        step["target"] = target
    step["receipt_id"] = uuid8_from_hex(step_digest_hex(step, flat=True))
    report = verify_receipt(receipt)
    assert report.check("members").status == "FAIL"
    want = "target is not a non-empty string" if target == "" else "link step target is not the child's workflow_id"
    assert want in report.failures[0].reason, report.failures


def test_save_bundle_refuses_a_folder_with_other_receipts(tmp_path: Path) -> None:
    """Another run's receipt left in the folder would make the saved bundle fail verification."""
    stale = child_run("yesterday")
    stale.save(tmp_path / "old.json", stale.finalize())
    parent = Collector(goal="plan")
    parent.link(child_run("research").finalize())
    with pytest.raises(FileExistsError, match=r"already holds other receipts \(old.json\)"):
        parent.save_bundle(tmp_path, parent.finalize())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.evidence.jsonl", "old.json"]
    again = parent.save_bundle(tmp_path / "fresh", parent.finalize())
    assert parent.save_bundle(tmp_path / "fresh", parent.finalize()) == again  # saving again is fine


def test_one_child_disclosed_alone_with_a_proof_of_its_link() -> None:
    """The auditor sees the child and one proof, never the parent's other steps (spec/linked.md)."""
    from aer1._proof import build_step_proof
    from aer1.verifier import verify_proof

    child = child_run("research").finalize()
    parent = Collector(goal="plan")
    parent.record("message", {"content": "private planning"}, agent="planner")
    step = parent.link(child, agent="research-team")
    receipt = parent.finalize()
    proof = build_step_proof(receipt, step["seq"], content=link_content(child))
    report = verify_proof(proof, expected_root=receipt["merkle_root"])
    assert report.valid, [f.reason for f in report.failures]
    proved = proof["step"]
    assert proved["kind"] == LINK_KIND and proved["target"] == child["workflow_id"]
    assert proved["receipt_hash"] == link_hash(link_content(child))
    other = child_run("other").finalize()
    assert proved["receipt_hash"] != link_hash(link_content(other))


def test_streamed_verification_says_links_were_not_followed_too(tmp_path: Path) -> None:
    """Large receipts are streamed: the note must not depend on which path verified them."""
    from aer1.verifier._stream import verify_streaming

    parent = Collector(goal="plan")
    parent.link(child_run("a").finalize())
    parent.link(child_run("b").finalize())
    path = parent.save(tmp_path / "p.json")
    report = verify_streaming(path, evidence=None, trusted_key_ids=None, expected_root=None, expected_head=None)
    assert report is not None and report.valid, report and [f.reason for f in report.failures]
    assert any(n.startswith("2 link step(s)") for n in report.notes), report.notes
