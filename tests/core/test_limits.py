"""One set of limits: whatever ``Collector.record()`` accepts, ``aer1-verify`` accepts with its evidence."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aer1 import Collector
from aer1 import _canonical as canonical
from aer1 import _limits as limits
from aer1 import _recover as recover
from aer1 import _redact as redact
from aer1.verifier import _evidence, _parse
from aer1.verifier._cli import main as verify_main


def _verify_cli(receipt: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = verify_main([str(receipt), "--json", *extra])
    return code, json.loads(out.getvalue())


def _nested(depth: int, inner: Any, as_object: bool) -> Any:
    for _ in range(depth):
        inner = {"k": inner} if as_object else [inner]
    return inner


def test_every_layer_reads_its_limits_from_the_one_module() -> None:
    assert canonical.MAX_DEPTH is limits.MAX_CONTENT_DEPTH
    assert redact._PLAIN_DEPTH is limits.MAX_CONTENT_DEPTH
    assert recover.MAX_JOURNAL_LINE_BYTES is limits.MAX_JOURNAL_LINE_BYTES
    assert _evidence.MAX_EVIDENCE_LINE_BYTES is limits.MAX_EVIDENCE_LINE_BYTES
    assert _parse.MAX_INPUT_BYTES is limits.MAX_INPUT_BYTES and _parse.MAX_DEPTH is limits.MAX_RECEIPT_DEPTH
    # the verifier's line and depth limits leave room for the largest and deepest content record() takes
    assert limits.MAX_EVIDENCE_LINE_BYTES >= limits.MAX_CONTENT_BYTES + 200
    assert limits.MAX_JOURNAL_LINE_BYTES >= limits.MAX_CONTENT_BYTES + 6 * 6 * limits.MAX_MEMBER_CHARS
    assert limits.MAX_EVIDENCE_DEPTH >= limits.MAX_CONTENT_DEPTH + 2


def test_two_megabyte_tool_output_and_content_at_the_depth_limit_verify_valid(tmp_path: Path) -> None:
    c = Collector(goal="big and deep outputs")
    c.record("fetch", {"output": "x" * 2_000_000})
    c.record("deep_list", _nested(limits.MAX_CONTENT_DEPTH, [], as_object=False))
    c.record("deep_object", _nested(limits.MAX_CONTENT_DEPTH - 1, {"leaf": 1}, as_object=True))
    c.record("seventy_deep", _nested(70, "leaf", as_object=True))
    assert c.verify() == []
    code, doc = _verify_cli(Path(c.save(tmp_path / "r.json")))
    assert (code, doc["verdict"]) == (0, "VALID"), doc["failures"]
    assert next(ch for ch in doc["checks"] if ch["name"] == "evidence")["status"] == "PASS"


@pytest.mark.parametrize("as_object", [False, True])
def test_content_one_level_past_the_depth_limit_is_refused_at_record_time(as_object: bool) -> None:
    c = Collector(goal="too deep")
    too_deep = _nested(limits.MAX_CONTENT_DEPTH + 1, "leaf", as_object)  # the leaf one level too deep
    with pytest.raises(ValueError, match="deeper than"):
        c.record("deep", too_deep)
    assert c.safe_record("deep", too_deep) is None and c.recording_failures == 1
    assert c.verify() == []


def test_content_over_the_size_limit_is_refused_at_record_time() -> None:
    c = Collector(goal="too big")
    with pytest.raises(ValueError, match=f"over the {limits.MAX_CONTENT_BYTES}-byte limit"):
        c.record("dump", "y" * limits.MAX_CONTENT_BYTES)
    assert c.step_count == 0


@pytest.mark.parametrize("member", ["tool", "agent", "reply_to", "target", "recipient", "call_id"])
def test_step_members_longer_than_the_receipt_string_limit_are_refused(member: str) -> None:
    c = Collector(goal="long names")
    long = "n" * (limits.MAX_MEMBER_CHARS + 1)
    args: dict[str, Any] = {"tool": "t", "content": None}
    if member == "tool":
        args["tool"] = long
    else:
        args[member] = long
    with pytest.raises(ValueError, match="characters long"):
        c.record(**args)
    c.record(**{**args, **{k: "n" * limits.MAX_MEMBER_CHARS for k in args if k != "content"}})
    assert c.verify() == []


@pytest.mark.unverified_receipts  # the evidence is tampered with on purpose
def test_collector_verify_checks_the_evidence() -> None:
    c = Collector(goal="evidence checked")
    c.record("tool", {"a": 1})
    assert c.verify() == []
    assert c._sink is not None
    c._sink.write(99, "0" * 64, b"{}")  # a stray evidence line: the in-memory receipt alone would not show it
    failures = c.verify()
    assert failures and failures[0].startswith("evidence:"), failures


_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.text(max_size=40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.binary(max_size=20) | st.sampled_from(["caf\udead", "\ud83d", "\U0001f600", "\x00\x1f\"\\"])
)
_CONTENT = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8) | st.sampled_from(["api_key", "\U0001f511", "\ud800"]), inner, max_size=4)
    | st.tuples(inner, inner),
    max_leaves=20,
)


@st.composite
def _shapes(draw: st.DrawFn) -> Any:
    """Any content: small values, long strings, nesting right up to (and past) the depth limit."""
    base = draw(_CONTENT)
    kind = draw(st.sampled_from(["plain", "deep", "long"]))
    if kind == "deep":
        depth = draw(st.integers(min_value=limits.MAX_CONTENT_DEPTH - 3, max_value=limits.MAX_CONTENT_DEPTH + 1))
        return _nested(depth, base, draw(st.booleans()))
    if kind == "long":
        return {"output": draw(st.sampled_from(["é", "a", "\n"])) * draw(st.integers(1_000_000, 1_200_000))}
    return base


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(contents=st.lists(_shapes(), min_size=1, max_size=3), redacting=st.booleans())
def test_whatever_record_accepts_verifies_valid_from_the_cli(contents: list[Any], redacting: bool) -> None:
    c = Collector(goal="property", redact=redacting)
    for content in contents:
        try:
            c.record("tool", content)
        except ValueError:
            continue  # refused at record time (a counted failure through safe_record): nothing to verify
    with tempfile.TemporaryDirectory() as folder:
        path = Path(c.save(os.path.join(folder, "r.json")))
        code, doc = _verify_cli(path)
    assert (code, doc["verdict"]) == (0, "VALID"), doc["failures"]
    assert math.isfinite(code)


@pytest.mark.parametrize("member", ["goal", "session_id", "verify_url"])
def test_workflow_members_longer_than_the_receipt_string_limit_are_refused(member: str) -> None:
    args = {"goal": "g", "session_id": "s", "verify_url": "https://example.org/"}
    args[member] += "x" * limits.MAX_MEMBER_CHARS
    with pytest.raises(ValueError, match=f"{member} is .* characters long"):
        Collector(**args)


def test_agents_are_bounded_to_what_the_streaming_verifier_holds() -> None:
    c = Collector(goal="many agents")
    with pytest.raises(ValueError, match=r"agent description is .* over the"):
        c.register_agent("a", type="T", description="d" * (limits.MAX_MEMBER_CHARS + 1))
    with pytest.raises(ValueError, match=f"agents member would grow past {limits.MAX_AGENTS_BYTES}"):
        for i in range(limits.MAX_AGENTS_BYTES // limits.MAX_MEMBER_CHARS + 1):
            c.register_agent(f"agent{i}", type="T", description="d" * limits.MAX_MEMBER_CHARS)
    assert limits.MAX_AGENTS_BYTES < limits.MAX_VALUE_BYTES and limits.MAX_AGENTS_BYTES < limits.CLOSE_RESERVE_BYTES
    assert c.verify() == []


def test_costly_small_receipt_is_streamed_and_reading_stops_once_settled(tmp_path: Path) -> None:
    path = tmp_path / "empty_steps.json"
    path.write_bytes(b'{"steps":[' + b"{}," * 2_500_000 + b"{}]}")  # 7.5 MB of text, ~190 MB once parsed
    assert limits.parse_cost(path.read_bytes()) > limits.MAX_PARSE_COST_BYTES
    code, doc = _verify_cli(path)
    assert (code, doc["verdict"]) == (1, "INVALID")
    parse = doc["checks"][0]
    assert parse["status"] == "NOT CHECKED" and parse["detail"].startswith("stopped reading after step 21"), parse


def test_costly_proof_and_evidence_line_are_refused_not_parsed(tmp_path: Path) -> None:
    costly = b"[" + b"[]," * 2_500_000 + b"[]]"
    proof = tmp_path / "x.proof.json"
    proof.write_bytes(b'{"type":"aer1-inclusion-proof","content":' + costly + b"}")
    code, doc = _verify_cli(proof)
    assert code == 2 and "MiB to parse" in doc["failures"][0]["message"], doc["failures"]
    with pytest.raises(_parse.MalformedInput, match="MiB to parse"):
        _evidence.parse_evidence_line(b'{"seq":1,"receipt_hash":"","content":' + costly + b"}\n", 2)
    with pytest.raises(ValueError, match="MiB to verify"):  # and record() never writes such a line
        Collector(goal="costly").record("tool", [[]] * 2_500_000)


@pytest.mark.parametrize("literal", [b"1" * 4301, b"-" + b"1" * 4301, b"1." + b"1" * 4300, b"1e" + b"1" * 4300])
def test_number_literals_over_4300_characters_are_malformed(tmp_path: Path, literal: bytes) -> None:
    path = tmp_path / "n.json"
    path.write_bytes(b'{"goal":' + literal + b"}")
    code, doc = _verify_cli(path)
    assert code == 2 and "4300" in doc["failures"][0]["message"], doc["failures"]


@given(text=st.binary(max_size=200) | st.text(alphabet="{}[],\"a 1", max_size=200))
def test_parse_cost_never_exceeds_its_per_byte_bound(text: bytes | str) -> None:
    assert limits.parse_cost(text) <= len(text) * limits.MAX_COST_PER_BYTE
