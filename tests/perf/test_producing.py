"""The producing fast paths decide exactly what the general paths decide.

* ``record()`` writes the chained header of a step without optional members from a
  template: every step's digest is the one the pure-Python RFC 8785 encoder gives, for any
  tool and agent name, kind, status and time;
* checked tool and agent names are remembered (a bounded number), each as one shared
  string; a name that fails a check is never remembered and fails every time;
* ``finalize()`` hands the recorded steps over without copying them and builds no list of
  leaves; a later ``finalize()`` returns an equal receipt, or, when the caller changed the
  steps it was given (the only copy), returns them as changed and says so in a warning.
"""

from __future__ import annotations

import copy
import enum
import logging
import tracemalloc
from collections.abc import Callable
from hashlib import sha256
from pathlib import Path
from typing import Any

import orjson
import pytest

from aer1 import Collector
from aer1._canonical import jcs_encode
from aer1._chain import STEP_TAG, genesis_digest, uuid8_from_hex
from aer1._collector import LABEL_CACHE_SIZE
from aer1._limits import MAX_MEMBER_CHARS
from aer1._receipt import KINDS, STEP_OPTIONAL_MEMBERS, STEP_REQUIRED_MEMBERS, STEP_STATUSES
from aer1.verifier import verify_receipt

#: Names that JSON has to escape or encode in every way it can.
_NAMES = ["alice", 'q"uote', "back\\slash", "tab\there", "nl\nx", "ctl\x01\x1f", "del\x7f", "ünïcødé", "東京",
          "emoji 💡", "line\u2028sep", "\u00a0nbsp", "</script>", "a" * 300, "close", "message", "1"]


def _chain_by_jcs(steps: list[dict[str, Any]], workflow_id: str) -> None:
    """Each step's id and the next step's prev_digest, recomputed with the pure-Python JCS encoder."""
    prev = genesis_digest(workflow_id)
    for step in steps:
        body = {k: v for k, v in step.items() if k != "receipt_id"}
        assert step["prev_digest"] == prev, f"step {step['seq']}: got prev_digest {step['prev_digest']}, want {prev}"
        prev = sha256(STEP_TAG + jcs_encode(body)).hexdigest()
        assert step["receipt_id"] == uuid8_from_hex(prev), f"step {step['seq']}: id is not derived from its JCS bytes"


def test_template_header_hashes_as_rfc_8785_for_every_name_kind_status_and_time() -> None:
    c = Collector("template", session_id="template")
    kinds = [k for k in KINDS if k not in ("close", "link")]  # those two are recorded by finalize() and link()
    for i, name in enumerate(_NAMES * 3):
        c.record(name, {"n": i}, agent=_NAMES[(i * 7) % len(_NAMES)], kind=kinds[i % len(kinds)],
                 status=STEP_STATUSES[i % len(STEP_STATUSES)], started_at=1_767_225_600 + i * 0.123457,
                 ended_at=None if i % 2 else 1_767_225_600 + i * 0.123457 + i)
    c.record("message", {"n": "defaults"})  # agent and kind left to the collector
    receipt = c.finalize("done")
    _chain_by_jcs(receipt["steps"], c.workflow_id)
    assert not verify_receipt(receipt).failures


def test_optional_members_still_sort_in_among_the_others() -> None:
    c = Collector("extras", session_id="extras")
    for i, name in enumerate(_NAMES):
        c.record("handoff", {"n": i}, agent=name, reply_to=name if i % 2 else None, target=name,
                 recipient=None if i % 3 else name, call_id=f"c{i}")
    receipt = c.finalize("done")
    _chain_by_jcs(receipt["steps"], c.workflow_id)
    for step in receipt["steps"]:
        want = [*STEP_REQUIRED_MEMBERS, *(k for k in STEP_OPTIONAL_MEMBERS if k in step)]
        assert list(step) == want, f"got member order {list(step)}, want {want}"


def test_record_returns_a_copy_a_caller_cannot_change_the_receipt_through() -> None:
    c = Collector("copy", session_id="copy")
    header = c.record("message", {"n": 1}, agent="alice")
    header["agent"] = "mallory"
    receipt = c.finalize("done")
    assert receipt["steps"][0]["agent"] == "alice"
    assert not verify_receipt(receipt).failures


def test_equal_names_kinds_and_statuses_are_one_string_object() -> None:
    c = Collector("shared", session_id="shared")
    for i in range(20):
        c.record("".join(["mess", "age"]), {"n": i}, agent="".join(["ali", "ce"]), kind="".join(["mess", "age"]),
                 status="".join(["o", "k"]), started_at=1_767_225_600 + i, ended_at=1_767_225_600 + i)
    steps = c.finalize("done")["steps"][:-1]
    for member in ("tool", "agent", "kind", "status"):
        assert len({id(s[member]) for s in steps}) == 1, f"got several {member} objects, want one shared"
    assert all(s["started_at"] is s["ended_at"] for s in steps), "equal start and end are not one object"


def test_string_enum_kinds_and_statuses_are_recorded_as_plain_strings() -> None:
    class Kind(str, enum.Enum):
        MESSAGE = "message"

    class Status(str, enum.Enum):
        ERROR = "error"

    c = Collector("enums", session_id="enums")
    step = c.record("message", {"n": 1}, agent="alice", kind=Kind.MESSAGE, status=Status.ERROR)
    assert type(step["kind"]) is str and type(step["status"]) is str
    assert (step["kind"], step["status"]) == ("message", "error")
    receipt = c.finalize("done")
    _chain_by_jcs(receipt["steps"], c.workflow_id)


@pytest.mark.parametrize(("member", "value", "error"), [
    ("tool", "bad\udc00", ValueError),
    ("agent", "bad\udc00", ValueError),
    ("tool", "", ValueError),
    ("agent", "x" * (MAX_MEMBER_CHARS + 1), ValueError),
    ("tool", 7, ValueError),
    ("agent", ["alice"], ValueError),
    ("kind", "mesage", ValueError),
    ("kind", ["message"], ValueError),
    ("status", "fine", ValueError),
    ("status", ["ok"], ValueError),
])
def test_a_name_that_fails_its_check_is_never_remembered(member: str, value: Any, error: type[Exception]) -> None:
    c = Collector("refused", session_id="refused")
    kwargs: dict[str, Any] = {"agent": "alice"}
    tool = value if member == "tool" else "message"
    if member != "tool":
        kwargs[member] = value
    for _ in range(3):  # refused each time: a failed check leaves nothing behind
        with pytest.raises(error):
            c.record(tool, {"n": 1}, **kwargs)
    assert c.step_count == 0


def test_names_past_the_cache_size_are_still_checked_and_recorded() -> None:
    c = Collector("many names", session_id="many names", evidence=False)
    for i in range(LABEL_CACHE_SIZE + 50):
        c.record(f"tool-{i}", {"n": i}, agent=f"agent-{i % 7}")
    with pytest.raises(ValueError):
        c.record("late\udc00", {"n": 0})  # past the cache size, a bad name is still refused
    receipt = c.finalize("done")
    assert len(receipt["steps"]) == LABEL_CACHE_SIZE + 51
    assert [s["tool"] for s in receipt["steps"][-3:-1]] == [f"tool-{LABEL_CACHE_SIZE + 48}",
                                                              f"tool-{LABEL_CACHE_SIZE + 49}"]
    assert not verify_receipt(receipt).failures


# ------------------------------------------------------------------ finalize


# The receipt invariant's byte snapshot of each receipt, taken inside finalize(), would count
# in the peak: this test opts out of it and verifies its receipt itself.
@pytest.mark.unverified_receipts
def test_finalize_copies_no_step_and_builds_no_list_of_leaves(tmp_path: Path) -> None:
    steps = 20_000
    c = Collector("memory", session_id="memory")
    for i in range(steps):
        c.record("message", {"n": i}, agent="alice")
    tracemalloc.start()
    try:
        receipt = c.finalize("done")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A copy of the step dicts would be over 250 bytes a step, a list of leaves 80.
    assert peak < steps * 16, f"got a peak of {peak / steps:.1f} bytes a step in finalize(), want under 16"
    assert len(receipt["steps"]) == steps + 1
    report = verify_receipt(c.save(tmp_path / "r.json", workflow=receipt))
    assert report.valid and report.check("evidence").status == "PASS", [f.reason for f in report.failures]


def test_finalize_again_returns_an_equal_receipt() -> None:
    c = Collector("again", session_id="again")
    for i in range(5):
        c.record("message", {"n": i}, agent="alice", call_id=f"c{i}" if i % 2 else None)
    first = c.finalize()
    snapshot = orjson.dumps(first)
    first["goal"] = "edited outside the steps"  # the receipt's own members come from the collector's bytes
    first["extra"] = 1
    second = c.finalize()
    assert orjson.dumps(second) == snapshot
    second["steps"].append({"seq": 99})  # each receipt has its own list of the steps
    assert orjson.dumps(c.finalize()) == snapshot
    assert c.verify() == []


def _set(member: str, value: Any) -> Callable[[list[dict[str, Any]]], None]:
    return lambda steps: steps[1].__setitem__(member, value)


#: Changes a caller can make to the steps of the receipt finalize() returned (they are the only copy).
_EDITS: dict[str, Callable[[list[dict[str, Any]]], None]] = {
    "member_value_changed": _set("agent", "mallory"),
    "receipt_id_changed": _set("receipt_id", "00000000-0000-8000-8000-000000000000"),
    "seq_made_a_float": _set("seq", 2.0),
    "seq_made_a_bool_equal_to_it": lambda steps: steps[0].__setitem__("seq", True),
    "member_added": _set("note", "added"),
    "member_removed": lambda steps: steps[1].pop("status"),
    "optional_member_removed": lambda steps: steps[1].pop("call_id"),
    "step_appended": lambda steps: steps.append(copy.deepcopy(steps[-1])),
    "step_removed": lambda steps: steps.pop(2),
    "steps_swapped": lambda steps: steps.insert(1, steps.pop(2)),
    "step_replaced_by_a_changed_copy": lambda steps: steps.__setitem__(1, {**steps[1], "tool": "other"}),
    "step_replaced_by_a_non_dict": lambda steps: steps.__setitem__(1, list(steps[1].items())),
    "last_step_changed": lambda steps: steps[-1].__setitem__("status", "error"),
}


@pytest.mark.unverified_receipts  # the second finalize() returns the caller's changed receipt, on purpose
@pytest.mark.parametrize("edit", sorted(_EDITS))
def test_a_changed_receipt_is_never_passed_on_unsaid(edit: str, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    c = Collector("edited", session_id="edited")
    for i in range(4):
        c.record("message", {"n": i}, agent="alice", call_id=f"c{i}")
    receipt = c.finalize()
    assert not caplog.records
    _EDITS[edit](receipt["steps"])
    with caplog.at_level(logging.WARNING, logger="aer1"):
        again = c.finalize()  # the kept steps are the only copy: returned as they now are, and said so
    assert [s for s in again["steps"]] == receipt["steps"]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "was changed" in warnings[0], warnings
    assert c.verify() != [], "got a changed receipt verified, want a failure"
    caplog.clear()
    c.save(tmp_path / "r.json")
    assert caplog.records and "was changed" in caplog.records[0].getMessage()
    assert not verify_receipt(tmp_path / "r.json").valid


def test_equal_copies_of_the_steps_are_the_same_receipt() -> None:
    c = Collector("copies", session_id="copies")
    for i in range(4):
        c.record("message", {"n": i}, agent="alice")
    receipt = c.finalize("done")
    snapshot = orjson.dumps(receipt)
    receipt["steps"][1] = copy.deepcopy(receipt["steps"][1])  # equal data: the receipt has not changed
    receipt["steps"][2] = {k: receipt["steps"][2][k] for k in reversed(list(receipt["steps"][2]))}
    again = c.finalize("done")
    assert orjson.loads(orjson.dumps(again)) == orjson.loads(snapshot)
    assert not verify_receipt(again).failures
