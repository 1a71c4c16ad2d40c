"""The quick step checks decide and word every receipt exactly as the reference step checker does.

Each input is verified twice: as shipped (the quick path first) and with the quick path
switched off (the reference alone); the two reports must be equal.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from aer1.verifier import verify_receipt

from ..helpers import make_receipt

Edit = Callable[[dict[str, Any]], None]


def _set(seq: int, name: str, value: Any) -> Edit:
    def edit(r: dict[str, Any]) -> None:
        r["steps"][seq - 1][name] = value
    return edit


def _replace_step(seq: int, value: Any) -> Edit:
    def edit(r: dict[str, Any]) -> None:
        r["steps"][seq - 1] = value
    return edit


def _upper_id(r: dict[str, Any]) -> None:
    step = r["steps"][1]
    step["receipt_id"] = step["receipt_id"].upper()


def _repeat_step(r: dict[str, Any]) -> None:
    r["steps"].insert(2, copy.deepcopy(r["steps"][1]))


def _time(seq: int, name: str, change: Callable[[str], str]) -> Edit:
    def edit(r: dict[str, Any]) -> None:
        step = r["steps"][seq - 1]
        step[name] = change(step[name])
    return edit


EDITS: dict[str, Edit] = {
    "honest": lambda r: None,
    "seq_bool": _set(1, "seq", True),
    "seq_float": _set(2, "seq", 2.0),
    "seq_big": _set(2, "seq", 2**70),
    "id_upper_case": _upper_id,
    "step_not_dict": _replace_step(2, ["not", "a", "step"]),
    "empty_agent": _set(2, "agent", ""),
    "lone_surrogate_agent": _set(2, "agent", "a\ud800"),
    "non_ascii_agent": _set(2, "agent", "ali\u00e7e"),
    "extra_member": _set(2, "colour", "red"),
    "extra_member_not_str": _set(2, "colour", 1),
    "hash_upper_case": _time(2, "receipt_hash", str.upper),
    "time_offset": _time(2, "started_at", lambda t: t[:-1] + "+00:00"),
    "time_lower_z": _time(2, "started_at", lambda t: t[:-1] + "z"),
    "time_lower_t": _time(2, "started_at", lambda t: t[:10] + "t" + t[11:]),
    "time_hour_24": _time(2, "started_at", lambda t: t[:11] + "24:00:00.000000Z"),
    "time_leap_second": _time(2, "ended_at", lambda t: t[:17] + "60" + t[19:]),
    "time_feb_30": _time(2, "started_at", lambda t: "2025-02-30" + t[10:]),
    "time_arabic_digit": _time(2, "started_at", lambda t: t[:3] + "\u0661" + t[4:]),
    "repeated_step": _repeat_step,
    "ended_before_started": _time(2, "ended_at", lambda t: "2000-01-01" + t[10:]),
    "prev_upper_case": _time(3, "prev_digest", str.upper),
    "first_prev_upper_case": _time(1, "prev_digest", str.upper),
    "close_kind_inside": _set(2, "kind", "close"),
    "link_without_target": _set(2, "kind", "link"),
    "kind_unknown": _set(2, "kind", "Message"),
    "status_list": _set(2, "status", ["ok"]),
    "tool_int": _set(2, "tool", 7),
    "seq_gap": _set(3, "seq", 4),
    "dropped_member": lambda r: r["steps"][1].pop("status"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_quick_path_report_equals_reference(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    receipt = make_receipt()
    EDITS[name](receipt)
    quick = verify_receipt(copy.deepcopy(receipt)).to_dict()
    monkeypatch.setattr("aer1.verifier._verify.quick_steps", lambda wf, jobs=1: None)
    reference = verify_receipt(copy.deepcopy(receipt)).to_dict()
    assert quick == reference, f"got quick report {quick}, want the reference's {reference}"
    if name == "honest":
        assert reference["valid"], f"got {reference}, want a valid honest receipt"
