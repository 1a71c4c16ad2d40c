"""The quick path of checks 2 to 5 (``verifier/_fast``) decides exactly as the step checker it stands in for.

It may only ever say "every step passes"; on anything else the reference runs from the
start. So for every receipt here, honest or tampered, the report with the quick path
must equal the report of the reference alone, field for field, and the quick path must
pass no receipt whose steps the reference refuses.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any

import orjson
import pytest

import aer1.verifier._verify as verifier_api
from aer1 import Collector
from aer1._canonical import CanonicalizationError, exact_bytes
from aer1._chain import genesis_digest, step_digest_hex, uuid8_from_hex
from aer1._limits import MAX_STRING_CHARS
from aer1._link import LINK_KIND
from aer1._merkle import merkle_root, merkle_root_hex, reduce_levels, root_of_leaves
from aer1._receipt import close_content
from aer1.verifier import _parallel as parallel
from aer1.verifier import verify_receipt
from aer1.verifier._fast import Passed, check_run, combine
from aer1.verifier._parallel import quick_steps
from aer1.verifier._parse import check_json_value
from aer1.verifier._steps import StepChecker

from ..helpers import make_collector


def _reference(receipt: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The report with the quick path switched off: the step checker alone."""
    with monkeypatch.context() as m:
        m.setattr(verifier_api, "quick_steps", lambda wf, jobs: None)
        return verify_receipt(receipt).to_dict()


def _same_as_reference(receipt: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The report equals the reference's; a quick pass is exactly the state the reference's feeding leaves."""
    quick = verify_receipt(receipt).to_dict()
    ref = _reference(receipt, monkeypatch)
    assert quick == ref, f"got {quick}, want the reference's {ref}"
    got = quick_steps(receipt)
    if got is not None:
        fed = _fed(receipt["steps"])
        assert got == fed, f"got a quick pass {got}, want the reference's {fed}"
        check_json_value(receipt["steps"])  # what the quick pass stands in for
    return quick


def _fed(steps: list[Any]) -> Passed | None:
    """What the step checker concludes from the steps alone: the state of a pass, or None."""
    checker = StepChecker(True)
    for step in steps:
        checker.feed(step)
    if checker.broken or checker.order_fail or checker.dup_fail or checker.chain_fail:
        return None
    raw = checker.leaves
    root = merkle_root([bytes(raw[k:k + 32]) for k in range(0, len(raw), 32)])
    return Passed(checker.n, checker.first_prev, checker.prev, root,
                  sum(1 for s in steps if s["kind"] == LINK_KIND), checker.close_at == checker.n - 1)


def _receipts() -> Iterator[tuple[str, dict[str, Any]]]:
    yield "helpers", make_collector().finalize(final_answer="ok TERMINATE")
    c = Collector(goal="every kind", session_id="s")
    for kind in ("task", "message", "tool_call", "tool_result", "handoff", "speaker_selection", "code_execution",
                 "approval", "termination"):
        try:
            c.record(kind, {"k": kind}, agent="a\u00e9\"\\\u2028\n", kind=kind, call_id="c-1", reply_to="r",
                     recipient="b", target="t")
        except Exception:  # a kind this version does not have: the others still cover the shapes
            continue
    yield "every kind, escaped agent", c.finalize("done")
    parent = Collector(goal="parent", session_id="p")
    parent.record("message", {"m": 1}, agent="a")
    parent.link(make_collector().finalize(final_answer="child"))
    yield "link step", parent.finalize("done")
    one = Collector(goal="one", session_id="o")
    yield "no recorded step", one.finalize("done")


@pytest.mark.parametrize(("name", "receipt"), list(_receipts()), ids=[n for n, _ in _receipts()])
def test_every_receipt_we_write_takes_the_quick_path(name: str, receipt: dict[str, Any],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert quick_steps(receipt) is not None, f"{name}: got the reference path, want the quick one"
    assert _same_as_reference(receipt, monkeypatch)["verdict"] == "VALID"


def _steps_of(receipt: dict[str, Any]) -> list[dict[str, Any]]:
    return receipt["steps"]  # type: ignore[no-any-return]


def _both(step: dict[str, Any], change: Callable[[str], str]) -> None:
    """The same changed time as started_at and ended_at (so ended_at >= started_at still holds)."""
    step["started_at"] = step["ended_at"] = change(step["started_at"])


class _Str(str):
    pass


class _Int(int):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


#: (what, change) over one step (a copy); each is a value or shape the reference has a rule about.
_STEP_CHANGES: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("seq as bool", lambda s: s.update(seq=True) if s["seq"] == 1 else s.update(seq=float(s["seq"]))),
    ("seq as float", lambda s: s.update(seq=float(s["seq"]))),
    ("seq as int subclass", lambda s: s.update(seq=_Int(s["seq"]))),
    ("seq off by one", lambda s: s.update(seq=s["seq"] + 1)),
    ("seq zero", lambda s: s.update(seq=0)),
    ("tool empty", lambda s: s.update(tool="")),
    ("tool not a string", lambda s: s.update(tool=7)),
    ("tool str subclass", lambda s: s.update(tool=_Str(s["tool"]))),
    ("tool over the string limit", lambda s: s.update(tool="t" * (MAX_STRING_CHARS + 1))),
    ("agent None", lambda s: s.update(agent=None)),
    ("agent a list", lambda s: s.update(agent=["a"])),
    ("agent a lone surrogate", lambda s: s.update(agent="a\ud800")),
    ("kind unknown", lambda s: s.update(kind="chat")),
    ("kind close early", lambda s: s.update(kind="close")),
    ("kind link without target", lambda s: s.update(kind="link")),
    ("status unknown", lambda s: s.update(status="done")),
    ("status a dict", lambda s: s.update(status={"ok": 1})),
    ("receipt_hash upper", lambda s: s.update(receipt_hash=s["receipt_hash"].upper())),
    ("receipt_hash space", lambda s: s.update(receipt_hash=s["receipt_hash"][:10] + " " + s["receipt_hash"][11:])),
    ("receipt_hash short", lambda s: s.update(receipt_hash=s["receipt_hash"][:63])),
    ("receipt_hash non-ASCII", lambda s: s.update(receipt_hash=s["receipt_hash"][:63] + "\u0661")),
    ("receipt_hash other", lambda s: s.update(receipt_hash="0" * 64)),
    ("prev_digest upper", lambda s: s.update(prev_digest=s["prev_digest"].upper())),
    ("prev_digest other", lambda s: s.update(prev_digest="1" * 64)),
    ("prev_digest long", lambda s: s.update(prev_digest=s["prev_digest"] + "0")),
    ("receipt_id str subclass", lambda s: s.update(receipt_id=_Str(s["receipt_id"]))),
    ("prev_digest str subclass", lambda s: s.update(prev_digest=_Str(s["prev_digest"]))),
    ("receipt_id upper", lambda s: s.update(receipt_id=s["receipt_id"].upper())),
    ("receipt_id dash moved", lambda s: s.update(receipt_id=s["receipt_id"][:7] + "-" + s["receipt_id"][7]
                                                  + s["receipt_id"][9:])),
    ("receipt_id random v4", lambda s: s.update(receipt_id="3f1c2b4a-1d2e-4f5a-9b8c-0a1b2c3d4e5f")),
    ("receipt_id version nibble", lambda s: s.update(receipt_id=s["receipt_id"][:14] + "4" + s["receipt_id"][15:])),
    ("receipt_id variant", lambda s: s.update(receipt_id=s["receipt_id"][:19] + "c" + s["receipt_id"][20:])),
    ("times Arabic digit", lambda s: _both(s, lambda t: "\u0662" + t[1:])),
    ("times lowercase t", lambda s: _both(s, lambda t: t.replace("T", "t"))),
    ("times month 13", lambda s: _both(s, lambda t: t[:5] + "13" + t[7:])),
    ("times hour 24", lambda s: _both(s, lambda t: t[:11] + "24" + t[13:])),
    ("times hour 29", lambda s: _both(s, lambda t: t[:11] + "29" + t[13:])),
    ("times hour 30", lambda s: _both(s, lambda t: t[:11] + "30" + t[13:])),
    ("times minute 60", lambda s: _both(s, lambda t: t[:14] + "60" + t[16:])),
    ("times second 61", lambda s: _both(s, lambda t: t[:17] + "61" + t[19:])),
    ("times Feb 30", lambda s: _both(s, lambda t: "2026-02-30" + t[10:])),
    ("times offset", lambda s: _both(s, lambda t: t[:-1] + "+00:00")),
    ("times millis", lambda s: _both(s, lambda t: t[:23] + "Z")),
    ("times one short, next one long", lambda s: s.update(started_at=s["started_at"][:-1],
                                                          ended_at=s["ended_at"] + "Z")),
    ("started_at hour 24 alone", lambda s: s.update(started_at=s["started_at"][:11] + "24" + s["started_at"][13:])),
    ("ended_at before started_at", lambda s: s.update(ended_at="2000-01-01T00:00:00.000000Z")),
    ("ended_at a number", lambda s: s.update(ended_at=1)),
    ("extra member", lambda s: s.update(note="x")),
    ("optional member empty", lambda s: s.update(call_id="")),
    ("optional member not a string", lambda s: s.update(reply_to=3)),
    ("optional member nested", lambda s: s.update(reply_to={"a": [1]})),
    ("optional member NaN", lambda s: s.update(target=math.nan)),
    ("required member missing", lambda s: s.pop("agent")),
    ("receipt_id missing", lambda s: s.pop("receipt_id")),
    ("non-string key", lambda s: s.update({1: "x"})),
]


def _rechained(receipt: dict[str, Any], prev_of: Callable[[int, str], str] | None = None) -> None:
    """Recompute every link, id, the close step's hash, chain_head and the root, as a forger would.

    Only the changed value is then wrong, so each shape rule is tested alone, not through the
    chain. ``prev_of(i, digest)``: the prev_digest step ``i`` gets instead of the digest before
    it (a forged link). Steps that cannot be hashed (not JSON data) are left as they are.
    """
    steps = receipt["steps"]
    prev = genesis_digest(receipt["workflow_id"])
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            return
        if i == len(steps) - 1 and step.get("kind") == "close":
            step["receipt_hash"] = hashlib.sha256(exact_bytes(close_content(receipt, len(steps)))).hexdigest()
        step["prev_digest"] = prev if prev_of is None else prev_of(i, prev)
        try:
            prev = step_digest_hex(step)
        except (CanonicalizationError, TypeError, ValueError):
            return
        step["receipt_id"] = uuid8_from_hex(prev)
    receipt["chain_head"] = prev
    _rerooted(receipt)


def _rerooted(receipt: dict[str, Any]) -> None:
    receipt["merkle_root"] = merkle_root_hex([str(s.get("receipt_id")) for s in receipt["steps"]])


@pytest.mark.unverified_receipts
@pytest.mark.parametrize(("what", "change"), _STEP_CHANGES, ids=[w for w, _ in _STEP_CHANGES])
@pytest.mark.parametrize("where", ["first", "middle", "close"])
@pytest.mark.parametrize("forged", [False, True], ids=["as changed", "rechained"])
def test_a_changed_step_gets_the_reference_report(what: str, change: Callable[[dict[str, Any]], None], where: str,
                                                  forged: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    receipt = make_collector().finalize(final_answer="ok TERMINATE")
    steps = _steps_of(receipt)
    i = {"first": 0, "middle": len(steps) // 2, "close": len(steps) - 1}[where]
    step = dict(steps[i])
    change(step)
    unchanged = repr(step) == repr(steps[i])  # e.g. kind close on the close step
    steps[i] = step
    if forged and what.startswith("prev_digest"):
        def forged_link(k: int, digest: str) -> str:
            link = {"prev_digest": digest}
            if k == i:
                change(link)
            return str(link["prev_digest"])
        _rechained(receipt, forged_link)
    elif forged:
        _rechained(receipt)
        if what.startswith("receipt_id"):
            change(step)  # again, the chain rewrote it; the root is then over the changed id
            _rerooted(receipt)
    report = _same_as_reference(receipt, monkeypatch)
    assert unchanged or forged or report["verdict"] != "VALID", f"{what}: got VALID, want a refusal"


_RECEIPT_CHANGES: list[tuple[str, Callable[[list[Any]], None]]] = [
    ("two steps swapped", lambda s: s.__setitem__(slice(1, 3), [s[2], s[1]])),
    ("a step repeated", lambda s: s.insert(2, s[1])),
    ("a step dropped", lambda s: s.pop(2)),
    ("the close step dropped", lambda s: s.pop()),
    ("a step a dict subclass", lambda s: s.__setitem__(1, _Dict(s[1]))),
    ("a step a list", lambda s: s.__setitem__(1, list(s[1].items()))),
    ("a step None", lambda s: s.__setitem__(1, None)),
    ("every time on Feb 30", lambda s: [_both(step, lambda t: "2026-02-30" + t[10:]) for step in s]),
    ("every time on Feb 29 of a leap year", lambda s: [_both(step, lambda t: "2028-02-29" + t[10:]) for step in s]),
    ("times over two days, one Feb 30", lambda s: [_both(step, lambda t, k=k: ("2026-02-30" if k == 3 else
                                                                                "2026-03-01") + t[10:])
                                                   for k, step in enumerate(s)]),
]


@pytest.mark.unverified_receipts
@pytest.mark.parametrize(("what", "change"), _RECEIPT_CHANGES, ids=[w for w, _ in _RECEIPT_CHANGES])
@pytest.mark.parametrize("forged", [False, True], ids=["as changed", "rechained"])
def test_a_changed_step_list_gets_the_reference_report(what: str, change: Callable[[list[Any]], None], forged: bool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    receipt = make_collector().finalize(final_answer="ok TERMINATE")
    change(receipt["steps"])
    if forged:
        _rechained(receipt)
    report = _same_as_reference(receipt, monkeypatch)
    assert "leap year" in what or report["verdict"] != "VALID", f"{what}: got VALID, want a refusal"


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("member", ["receipt_hash", "prev_digest", "receipt_id", "started_at", "ended_at"])
def test_a_character_moved_to_the_next_step_gets_the_reference_report(member: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two values of one member, one a character short and the next one long: joined, they look whole."""
    receipt = make_collector().finalize(final_answer="ok TERMINATE")
    steps = receipt["steps"]
    if member in ("started_at", "ended_at"):  # ended_at >= started_at must hold around the move
        steps[1]["started_at"], steps[1]["ended_at"] = "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:00.000009Z"
        steps[2]["started_at"], steps[2]["ended_at"] = "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:01.000000Z"
    if member == "prev_digest":
        carried: list[str] = []

        def moved(k: int, digest: str) -> str:
            if k == 1:
                carried.append(digest[-1])
                return digest[:-1]
            return carried[0] + digest if k == 2 else digest
        _rechained(receipt, moved)
    else:
        if member != "receipt_id":
            _move_a_character(steps, member)
        _rechained(receipt)
        if member == "receipt_id":
            _move_a_character(steps, member)
            _rerooted(receipt)
    report = _same_as_reference(receipt, monkeypatch)
    assert report["verdict"] != "VALID", f"{member}: got VALID, want a refusal"


def _move_a_character(steps: list[dict[str, Any]], member: str) -> None:
    first, second = steps[1][member], steps[2][member]
    steps[1][member], steps[2][member] = first[:-1], first[-1] + second


def test_runs_that_repeat_an_id_do_not_combine() -> None:
    """A repeated id cannot come with a sound chain short of a SHA-256 collision: the seam check is shown on runs."""
    c = Collector(goal="dup", session_id="dup")
    for k in range(6):
        c.record("message", {"k": k}, agent="a")
    steps = c.finalize("done")["steps"]
    first, second = check_run(steps, 0, 4, last=False), check_run(steps, 4, len(steps), last=True)
    assert first is not None and second is not None
    assert combine([first, second]) is not None
    second.leaves = [first.leaves[0], *second.leaves[1:]]
    assert combine([first, second]) is None, "got a pass with a repeated leaf, want None"


@pytest.mark.unverified_receipts
def test_random_one_character_changes_get_the_reference_report(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(18)
    alphabet = "0123456789abcdefABCDEF-:.TZ \u0663\"\\é"
    base = orjson.dumps(make_collector().finalize(final_answer="ok TERMINATE"))
    for _ in range(150):
        receipt = orjson.loads(base)
        step = rng.choice(receipt["steps"])
        name = rng.choice(sorted(step))
        value = step[name]
        if isinstance(value, str) and value:
            k = rng.randrange(len(value))
            step[name] = value[:k] + rng.choice(alphabet) + value[k + 1:]
        else:
            step[name] = value + rng.choice((-1, 1))
        _same_as_reference(receipt, monkeypatch)


@pytest.mark.unverified_receipts
def test_json_value_refusals_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick path stands in for the JSON-value walk over the steps only when it passes them all."""
    receipt = make_collector().finalize(final_answer="ok TERMINATE")
    receipt["goal"] = _Str("goal")  # outside the steps: still walked
    report = _same_as_reference(receipt, monkeypatch)
    assert report["verdict"] == "MALFORMED", f"got {report['verdict']}, want MALFORMED"
    receipt = make_collector().finalize(final_answer="ok TERMINATE")
    receipt["steps"][1]["agent"] = "a" * (MAX_STRING_CHARS + 1)
    report = _same_as_reference(receipt, monkeypatch)
    assert report["verdict"] == "MALFORMED", f"got {report['verdict']}, want MALFORMED"


def test_runs_of_a_receipt_combine_to_the_whole() -> None:
    """Runs checked apart (as worker processes check them) give what one run gives, and refuse a broken seam."""
    c = Collector(goal="runs", session_id="runs")
    for k in range(70):
        c.record("message", {"k": k}, agent="a")
    steps = c.finalize("done")["steps"]
    n = len(steps)
    whole = combine([check_run(steps, 0, n, last=True)])
    assert whole is not None
    for levels in (1, 2, 3):
        size = 2 ** levels * 3
        cuts = [*range(0, n, size), n]
        runs = [check_run(steps, lo, hi, last=hi == n, levels=levels) for lo, hi in pairwise(cuts)]
        parts = combine(runs)
        assert parts == whole, f"levels {levels}: got {parts}, want {whole}"
        assert combine([runs[0], *runs[2:]]) is None, "got a pass with a run left out, want None"
        assert combine([runs[1], runs[0], *runs[2:]]) is None, "got a pass with runs swapped, want None"


@pytest.mark.parametrize("n", [2, 3, 5, 8, 9, 16, 17, 31, 33, 64, 65, 100])
@pytest.mark.parametrize("levels", [1, 2, 3, 4])
def test_merkle_nodes_of_aligned_runs_give_the_root(n: int, levels: int) -> None:
    leaves = [bytes([i % 256, i // 256]) * 16 for i in range(n)]
    size = 2 ** levels
    if n <= size:
        return  # one run: its nodes are the root's business alone
    nodes: list[bytes] = []
    for lo in range(0, n, size * 2):
        nodes += reduce_levels(leaves[lo:lo + size * 2], levels)
    got = root_of_leaves(nodes)
    assert got == merkle_root(leaves), f"n={n} levels={levels}: got {got.hex()}, want {merkle_root(leaves).hex()}"


def _long_receipt(n: int) -> dict[str, Any]:
    c = Collector(goal="long", session_id="long")
    for k in range(n):
        c.record("message", {"k": k}, agent="a", reply_to="u" if k % 3 == 0 else None)
    return c.finalize("done")


#: Run in a fresh interpreter: the test process may have threads left by other tests, and then
#: (rightly) never forks. Tampers with step ``argv[1]`` (or none), prints whether each jobs
#: setting gave the one-process report and whether a fork could be made.
_WORKERS_SCRIPT = """
import sys, json
from aer1 import Collector
from aer1.verifier import verify_receipt, _parallel as parallel
parallel.PARALLEL_MIN_STEPS, parallel.LEVELS = 1, 3
c = Collector(goal="long", session_id="long")
for k in range(70):
    c.record("message", {"k": k}, agent="a", reply_to="u" if k % 3 == 0 else None)
receipt = c.finalize("done")
k = int(sys.argv[1])
if k >= 0:
    receipt["steps"][k] = {**receipt["steps"][k], "agent": "mallory"}
one = verify_receipt(receipt, jobs=1).to_dict()
same = {jobs: verify_receipt(receipt, jobs=jobs).to_dict() == one for jobs in (2, 3, 8)}
quick = [parallel.quick_steps(receipt, j) for j in (1, 3)]
print(json.dumps({"fork_safe": parallel.fork_safe(), "same": same, "quick_equal": quick[0] == quick[1],
                  "quick_passed": quick[1] is not None, "verdict": one["verdict"]}))
"""


@pytest.mark.unverified_receipts
@pytest.mark.parametrize(("where", "k"), [("none", -1), ("first run", 5), ("seam", 24), ("worker run", 50),
                                          ("last step", 70)])
def test_worker_processes_decide_as_one_process(where: str, k: int) -> None:
    """Runs checked in forked workers give the report one process gives, honest or tampered at any place."""
    out = subprocess.run([sys.executable, "-c", _WORKERS_SCRIPT, str(k)], capture_output=True, text=True,
                         check=True, timeout=120)
    got = json.loads(out.stdout)
    assert got["fork_safe"], f"got no fork in a fresh interpreter, want the forked path tested: {got}"
    assert all(got["same"].values()), f"{where}: got {got['same']}, want every jobs setting to give one report"
    assert got["quick_equal"], f"{where}: got different quick results for jobs=1 and jobs=3"
    assert got["quick_passed"] == (k < 0), f"{where}: got quick pass {got['quick_passed']}"
    assert (got["verdict"] == "VALID") == (k < 0), f"{where}: got {got['verdict']}"


def test_no_fork_while_another_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_STEPS", 1)
    monkeypatch.setattr(parallel, "LEVELS", 3)
    receipt = _long_receipt(40)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not parallel.fork_safe(), "got fork_safe with a second thread, want False"
        forks: list[int] = []
        real_fork = os.fork
        monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
        assert verify_receipt(receipt, jobs=2).verdict == "VALID"
        assert forks == [], f"got {len(forks)} forks with a thread running, want none"
    finally:
        stop.set()
        other.join()
