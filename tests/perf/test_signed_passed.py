"""The signed bytes of a receipt whose steps all passed the quick checks are written at C speed, to the same report.

When every step passed (``_fast``), the signature check takes the steps' sorted JSON as
their RFC 8785 bytes instead of walking each step twice. Every signed receipt, honest or
not, must get the report the reference gives (the quick path off, the whole receipt
walked and encoded exactly), and the shortcut must be the one taken.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from aer1 import Collector
from aer1.verifier import _signed

from ..helpers import KEYS, make_collector
from .test_quick_steps import _rechained, _reference, verify_receipt


def _signed_receipt() -> dict[str, Any]:
    return make_collector(signing_key=KEYS / "trusted.key").finalize(final_answer="ok TERMINATE")


def _escaped_agents() -> dict[str, Any]:
    c = Collector(goal="escapes", session_id="s", signing_key=KEYS / "trusted.key")
    c.register_agent("a", type="AssistantAgent")
    for k, agent in enumerate(["a\u00e9\"\\\u2028\n", "\U0001f600", "\u00ff\u0100", "tab\there"]):
        c.record("message", {"k": k}, agent=agent, reply_to="u")
    return c.finalize("done")


def _forged(r: dict[str, Any]) -> None:
    r["steps"][1]["agent"] = "mallory"
    _rechained(r)


_CHANGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "honest": lambda r: None,
    "re-chained forgery": _forged,
    "goal changed": lambda r: r.update(goal="another goal"),
    "an agent member added": lambda r: r["agents"][0].update(extra="x"),
    "an integer no double holds, in an agent": lambda r: r["agents"][0].update(extra=2**60 + 1),
    "a lone surrogate in the goal": lambda r: r.update(goal="\ud800"),
    "a lone surrogate before an unsafe integer": lambda r: (r.update(goal="\udfff"),
                                                            r["agents"][0].update(extra=2**60 + 1)),
    "an unsafe integer before a lone surrogate": lambda r: (r["agents"][0].update(extra=2**60 + 1),
                                                            r.update(verify_url="\udfff")),
    "signature value changed": lambda r: r["signature"].update(value=r["signature"]["value"][::-1]),
}


#: Changes the members check lets through, so the signature check runs on them.
_REACH = {"honest", "re-chained forgery", "goal changed", "a lone surrogate in the goal"}


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("what", list(_CHANGES))
@pytest.mark.parametrize("make", [_signed_receipt, _escaped_agents], ids=["helpers", "escaped agents"])
def test_a_signed_receipt_whose_steps_pass_gets_the_reference_report(what: str, make: Callable[[], dict[str, Any]],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    receipt = make()
    _CHANGES[what](receipt)
    calls: list[int] = []
    real = _signed.signing_input_of_passed

    def spy(wf: Any) -> Any:
        calls.append(1)
        return real(wf)

    monkeypatch.setattr(_signed, "signing_input_of_passed", spy)
    quick = verify_receipt(copy.deepcopy(receipt)).to_dict()
    reference = _reference(copy.deepcopy(receipt), monkeypatch)
    assert quick == reference, f"got {quick}, want the reference's {reference}"
    reached = quick["checks"][1]["status"] == "PASS" and "malformed" not in (quick["checks"][5]["detail"] or "")
    assert calls == ([1] if reached else []), f"got {len(calls)} uses of the shortcut, want one when check 6 runs"
    if what in _REACH:
        assert reached, f"got {quick['checks'][:2]}, want the change to reach the signature check"
    assert (quick["verdict"] == "VALID") == (what == "honest"), quick
