"""Fixtures for the erasure tests: signing keys on disk, the CLIs run in process, file snapshots."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aer1._cli import main as aer1_main
from aer1._signing import generate_key_pair, key_id, load_public_key
from aer1.verifier import Report, verify_receipt


@dataclass(frozen=True)
class Key:
    """A key pair written to files, and its key id."""

    private: Path
    public: Path
    key_id: str


def write_key(folder: Path, name: str) -> Key:
    """A fresh Ed25519 key pair saved as NAME.key and NAME.pub in ``folder``."""
    pem_private, pem_public = generate_key_pair()
    private, public = folder / f"{name}.key", folder / f"{name}.pub"
    private.write_bytes(pem_private)
    public.write_bytes(pem_public)
    return Key(private, public, key_id(load_public_key(pem_public)))


@pytest.fixture
def key(tmp_path: Path) -> Key:
    """The operator's key: signs receipts and erasure records."""
    return write_key(tmp_path, "operator")


@pytest.fixture
def other_key(tmp_path: Path) -> Key:
    """A key nobody trusts."""
    return write_key(tmp_path, "stranger")


def run_aer1(*args: str | Path) -> tuple[int, str, str]:
    """``aer1 ARGS`` in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = aer1_main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def erase(receipt: Path, key: Key, *selection: str, reason: str = "GDPR Art. 17 request 42") -> dict[str, Any]:
    """Run ``aer1 erase`` with ``--json``; returns its output, failing the test on a non-zero exit."""
    code, out, err = run_aer1("erase", receipt, *selection, "--reason", reason, "--key", key.private, "--json")
    assert code == 0, f"got exit {code}: {err or out}"
    doc: dict[str, Any] = json.loads(out)
    return doc


def verify(receipt: Path, *trusted: Key) -> Report:
    """Our verifier over the file, its evidence, disclosures and erasure records beside it."""
    return verify_receipt(str(receipt), trusted_key_ids=[k.key_id for k in trusted] if trusted else None)


def fields(report: Report) -> dict[str, Any]:
    """The ``fields`` member of the report's JSON form."""
    doc = report.to_dict()
    assert "fields" in doc, f"got no committed fields in {doc['checks'][6]}"
    out: dict[str, Any] = doc["fields"]
    return out


Snapshot = Callable[[Path], dict[str, str]]


def snapshot(receipt: Path) -> dict[str, str]:
    """SHA-256 of the receipt and evidence files (erasure must never change them)."""
    evidence = receipt.with_name(receipt.stem + ".evidence.jsonl")
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (receipt, evidence)}
