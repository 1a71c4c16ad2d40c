"""The producer's step header, built from a template, is the RFC 8785 form of the step for every name.

Names with every control character, quotes, backslashes, DEL, C1 controls, line and
paragraph separators, a BOM and astral characters: each step id must be the one the
exact (non-orjson) encoder derives, so any verifier computing RFC 8785 agrees.
"""

from __future__ import annotations

import hashlib
import json

from aer1 import Collector
from aer1._chain import STEP_TAG, step_digest_hex, uuid8_from_hex
from aer1.verifier import verify_receipt

NAMES = ["".join(map(chr, range(1, 0x20))), 'q"b\\s/', "\x7f\x80\x9f\xa0", "\u2028\u2029\ufeff", "\U0001f600 \u00e9",
         "\ufffe\uffff"]


def test_template_headers_match_exact_encoder() -> None:
    c = Collector(goal="names")
    for i, name in enumerate(NAMES):
        c.register_agent(name, type="AssistantAgent")
        c.record(NAMES[-1 - i], {"i": i}, agent=name)
    receipt = c.finalize(final_answer="done")
    for step in receipt["steps"]:
        want = uuid8_from_hex(step_digest_hex(step))
        assert step["receipt_id"] == want, f"step {step['seq']}: got id {step['receipt_id']}, want {want}"
        # an encoder apart from orjson: ASCII member names and BMP-or-astral strings, JCS escapes
        body = {k: v for k, v in step.items() if k != "receipt_id"}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        digest = hashlib.sha256(STEP_TAG + text).hexdigest()
        assert step["receipt_id"] == uuid8_from_hex(digest), f"step {step['seq']}: got {text!r} hashed otherwise"
    report = verify_receipt(receipt)
    assert report.valid, f"got {report.verdict}, want VALID"
