"""The log entry of a receipt (spec/log.md): the vector, byte for byte, and the strict reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1._tlog import Ed25519Signer, LogMalformed, leaf_hash, parse_tlog_proof, parse_vkey, root_of, verify_tlog_proof
from aer1._tlog._entry import CLOSED, OPENED, LogEntry, entry_for_receipt, opened_entry, parse_entry

VECTORS = Path(__file__).parents[2] / "spec" / "vectors"
LOG = json.loads((VECTORS / "log-vector.json").read_text())
RECEIPT = json.loads((VECTORS / "receipt-vector.json").read_text())["receipt"]


def test_the_vector_recomputes() -> None:
    closed = entry_for_receipt(RECEIPT).encode()
    opened = opened_entry(RECEIPT["workflow_id"], RECEIPT["receipt_id"], RECEIPT["steps"][0]["started_at"]).encode()
    assert closed.decode() == LOG["closed_entry"] and opened.decode() == LOG["opened_entry"]
    assert [leaf_hash(e).hex() for e in (opened, closed)] == LOG["leaf_hashes"]
    assert root_of([leaf_hash(opened), leaf_hash(closed)]).hex() == LOG["root"]
    signer = Ed25519Signer(LOG["origin"], Ed25519PrivateKey.from_private_bytes(bytes.fromhex(LOG["log_seed_hex"])))
    assert signer.verifier().vkey == LOG["vkey"]
    got = verify_tlog_proof(parse_tlog_proof(LOG["tlog_proof"].encode()), closed, [parse_vkey(LOG["vkey"])])
    assert got.index == 1 and got.checkpoint.size == 2
    assert LOG["tlog_proof"].endswith(LOG["checkpoint"])


def test_entries_read_back_and_say_what_they_bind() -> None:
    e = parse_entry(LOG["closed_entry"].encode())
    assert (e.kind, e.status, e.signer, e.chain_head) == (CLOSED, "ok", RECEIPT["signature"]["key_id"],
                                                          RECEIPT["chain_head"])
    assert parse_entry(LOG["opened_entry"].encode()).kind == OPENED
    unsigned = {k: v for k, v in RECEIPT.items() if k != "signature"}
    assert b"\nsigner none\n" in entry_for_receipt(unsigned).encode()
    assert parse_entry(entry_for_receipt(unsigned).encode()).signer is None


@pytest.mark.parametrize("edit, why", [
    (lambda t: t.replace("status ok", "status OK"), "status"),
    (lambda t: t.replace("aer1-log-entry/v1", "aer1-log-entry/v2"), "want"),
    (lambda t: t.replace("closed\n", "shut\n"), "kind"),
    (lambda t: t + "extra 1\n", "canonical"),
    (lambda t: t.replace("status ok\n", ""), "status"),
    (lambda t: t.replace("\nstatus ok\nmerkle_root", "\nmerkle_root"), "status"),
    (lambda t: t.rstrip("\n"), "newline"),
    (lambda t: t.replace("status ok", "status  ok"), "status"),
    (lambda t: t.replace("signer ", "signer x"), "signer"),
])
def test_a_changed_entry_is_not_an_entry(edit: object, why: str) -> None:
    with pytest.raises(LogMalformed, match=why):
        parse_entry(edit(LOG["closed_entry"]).encode())  # type: ignore[operator]


def test_a_receipt_without_what_an_entry_binds_has_none() -> None:
    base = {k: v for k, v in RECEIPT.items() if k != "chain_head"}
    with pytest.raises(LogMalformed, match="chain_head"):
        entry_for_receipt(base)
    with pytest.raises(LogMalformed, match="no steps"):
        entry_for_receipt({**RECEIPT, "steps": []})
    with pytest.raises(LogMalformed, match="workflow_id"):
        entry_for_receipt({**RECEIPT, "workflow_id": "NOT-A-UUID"})
    with pytest.raises(LogMalformed, match="opened"):
        LogEntry(OPENED, RECEIPT["workflow_id"], RECEIPT["receipt_id"], "2026-01-01T00:00:00.000000Z",
                 status="ok").encode()
