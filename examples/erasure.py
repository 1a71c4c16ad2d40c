"""Erasure: record a support run with personal fields committed, erase one customer's data, verify again.

    python examples/erasure.py [OUT_DIR]

Writes OUT_DIR/receipt.json with its evidence, disclosures and, after the erasure, its
signed erasure records (default OUT_DIR: out/erasure); the key's public half is
OUT_DIR/signing.pub. The receipt's bytes are the same before and after the erasure.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from _outdir import parse_out_dir

from aer1 import Collector, generate_key_pair, key_id, load_public_key, verify_receipt

EMAIL = "alice@example.com"


def main(out_dir: Path) -> int:
    private_pem, public_pem = generate_key_pair()
    (out_dir / "signing.key").write_bytes(private_pem)
    (out_dir / "signing.key").chmod(0o600)
    (out_dir / "signing.pub").write_bytes(public_pem)
    trusted = [key_id(load_public_key(public_pem))]

    collector = Collector(goal="Answer a refund request", signing_key=private_pem.decode(),
                          personal=["arguments.email", "result.customer", "content"])
    collector.record("task", {"task": "Refund order 1234"}, agent="user")
    collector.record("crm_lookup", {"arguments": {"email": EMAIL},
                                    "result": {"customer": {"name": "Alice Smith", "email": EMAIL}, "orders": 3}},
                     agent="support", call_id="call_1")
    collector.record("refund", {"arguments": {"order": 1234, "amount": 40}, "result": "refunded"},
                     agent="support", call_id="call_2")
    collector.record("message", {"content": f"Refunded order 1234 to {EMAIL}"}, agent="support")
    receipt = out_dir / "receipt.json"
    collector.save(str(receipt))
    before = hashlib.sha256(receipt.read_bytes()).hexdigest()
    print(verify_receipt(str(receipt), trusted_key_ids=trusted).to_text().splitlines()[-1])

    # the `aer1` command installed beside this Python
    aer1 = str(Path(sys.executable).with_name("aer1"))
    code = subprocess.run([aer1, "erase", str(receipt), "--value", EMAIL, "--contains", "--reason",
                           "GDPR Art. 17 request 42", "--key", str(out_dir / "signing.key")], check=False).returncode
    report = verify_receipt(str(receipt), trusted_key_ids=trusted)
    print(report.to_text().splitlines()[-1])
    same = hashlib.sha256(receipt.read_bytes()).hexdigest() == before
    print(f"receipt bytes unchanged by the erasure: {same}")
    return 0 if code == 0 and report.verdict == "VALID" and same else 1


if __name__ == "__main__":
    sys.exit(main(parse_out_dir(__doc__.splitlines()[0], Path("out/erasure"))))
