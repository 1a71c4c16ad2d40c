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


def _either(f: object, *args: object) -> object:
    """What ``f(*args)`` returns, or the kind of LogMalformed it raises."""
    try:
        return f(*args)  # type: ignore[operator]
    except LogMalformed:
        return LogMalformed


def test_the_walks_reading_of_an_entry_accepts_what_the_strict_reader_does() -> None:
    import random

    from aer1._tlog._entry import entry_ids

    def strict(data: bytes) -> object:
        e = parse_entry(data)
        return e.kind, f"{e.workflow_id}/{e.receipt_id}".encode(), e.started_at.encode()

    rng = random.Random(7)
    bases = [LOG["closed_entry"].encode(), LOG["opened_entry"].encode(),
             entry_for_receipt({k: v for k, v in RECEIPT.items() if k != "signature"}).encode()]
    edits = [b"\n", b" ", b"x", b"A", b"0", b"f", b"-", b"none", b"\r", b"\x00", b"\xc3\xa9", b""]
    tried = accepted = 0
    for base in bases:
        assert entry_ids(base) == strict(base)
        for _ in range(1500):
            data = bytearray(base)
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(len(data) + 1)
                cut = rng.choice((0, 0, 1, 2))
                data[at : at + cut] = rng.choice(edits)
            got, want = _either(entry_ids, bytes(data)), _either(strict, bytes(data))
            assert got == want, bytes(data)
            tried += 1
            accepted += want is not LogMalformed
    assert tried == 4500 and accepted > 0  # some edits keep an entry (a digit for a digit)


def test_a_receipts_entry_is_the_same_by_the_fast_way_and_the_checked_one() -> None:
    from aer1._tlog._entry import receipt_entry_bytes

    def checked(receipt: object) -> object:
        return entry_for_receipt(receipt).encode()  # type: ignore[arg-type]

    unsigned = {k: v for k, v in RECEIPT.items() if k != "signature"}
    step = RECEIPT["steps"][0]
    two_lines = f"{RECEIPT['workflow_id']}\nreceipt_id {RECEIPT['receipt_id']}"
    variants: list[object] = [RECEIPT, unsigned, [], "x", {**RECEIPT, "steps": "x"}, {**RECEIPT, "steps": [1]},
                              {**RECEIPT, "signature": {"key_id": "none"}}, {**RECEIPT, "signature": "x"},
                              {**RECEIPT, "signature": {"key_id": 1}}, {**RECEIPT, "merkle_root": int("9" * 64)},
                              {**RECEIPT, "status": "OK"}, {**RECEIPT, "status": "ok\n"},
                              {**RECEIPT, "workflow_id": two_lines},
                              {**RECEIPT, "steps": [{**step, "started_at": step["started_at"][:-1]}]},
                              {**RECEIPT, "steps": [{**step, "started_at": step["started_at"].replace("0", "\u0660")}]},
                              {**RECEIPT, "chain_head": RECEIPT["chain_head"].upper()}]
    for receipt in variants:
        assert _either(receipt_entry_bytes, receipt) == _either(checked, receipt), receipt
