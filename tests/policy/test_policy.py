"""Policies fail closed: each requirement, allow list and trace rule form fails a forged or out-of-policy receipt."""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector, verify_receipt
from aer1._merkle import merkle_root_hex
from aer1._receipt import evidence_path_for
from aer1._signing import generate_key_pair

from .conftest import POLICIES, pay_call, payment_run

Run = Callable[..., tuple[int, str, str]]
PAY_RULES = """
[[rule]]
name = "pay approved"
form = "approved_before"
tool = "pay"

[[rule]]
name = "pay cap"
form = "argument"
tool = "pay"
argument = "amount"
max = 1000

[[rule]]
name = "payee form"
form = "argument"
tool = "pay"
argument = "payee"
pattern = "acct_[0-9]{8}"

[[rule]]
name = "quiet after the end"
form = "none_after"
kind = "*"
after = "termination"

[[rule]]
name = "two code runs"
form = "at_most"
kind = "code_execution"
count = 2
"""


def _policy(tmp_path: Path, body: str, name: str = "p.toml") -> Path:
    p = tmp_path / name
    p.write_text('format = "aer1-policy-v1"\nname = "test"\n' + body)
    return p


def _violations(out: str) -> list[tuple[str, list[int]]]:
    doc = json.loads(out)
    return [(f["rule"], f["seqs"]) for f in doc["failures"] if f["check"] == "policy"]


@pytest.mark.unverified_receipts
def test_stripped_receipt_valid_alone_fails_require_chain(tmp_path: Path, run_cli: Run) -> None:
    wf = json.loads(payment_run(tmp_path / "r.json", None).read_text())
    for member in ("profile", "chain_head", "agents"):
        wf.pop(member, None)
    for s in wf["steps"]:
        for member in ("prev_digest", "kind", "agent", "call_id"):
            s.pop(member, None)
        s["receipt_id"] = str(uuid.uuid4())
    wf["merkle_root"] = merkle_root_hex([s["receipt_id"] for s in wf["steps"]])
    stripped = tmp_path / "stripped.json"
    stripped.write_text(json.dumps(wf))
    assert run_cli(stripped)[0] == 0  # base AER-1 alone: VALID, which is why auditors need --require
    code, out, _ = run_cli(stripped, "--require", "chain", "--json")
    assert code == 1
    assert _violations(out) == [("require.chain", [])]


def test_require_signature_needs_a_trusted_key(tmp_path: Path, run_cli: Run, keys: tuple[bytes, Path, str]) -> None:
    unsigned = payment_run(tmp_path / "u.json", None)
    code, _, err = run_cli(unsigned, "--require", "signature")
    assert code == 2 and "no key is trusted" in err
    code, out, _ = run_cli(unsigned, "--require", "signature", "--key", keys[1], "--json")
    assert code == 1 and ("require.signature", []) in _violations(out)
    signed = payment_run(tmp_path / "s.json", keys[0])
    assert run_cli(signed, "--require", "chain,signature,evidence", "--key", keys[1])[0] == 0


def test_require_evidence_fails_without_evidence(tmp_path: Path, run_cli: Run) -> None:
    r = payment_run(tmp_path / "r.json", None)
    Path(evidence_path_for(str(r))).unlink()
    code, out, _ = run_cli(r, "--require", "evidence", "--json")
    assert code == 1 and _violations(out) == [("require.evidence", [])]


def test_require_timestamp_fails_closed_without_a_verified_token(tmp_path: Path, run_cli: Run) -> None:
    r = payment_run(tmp_path / "r.json", None)
    code, out, _ = run_cli(r, "--require", "timestamp", "--json")
    assert code == 1
    f = next(f for f in json.loads(out)["failures"] if f["check"] == "policy")
    assert f["rule"] == "require.timestamp" and "the timestamp check did not pass" in f["message"]
    p = _policy(tmp_path, "[require]\ntimestamp = true\n")
    assert _violations(run_cli(r, "--policy", p, "--json")[1]) == [("require.timestamp", [])]


def test_policy_signers_name_the_only_keys_allowed(tmp_path: Path, run_cli: Run, keys: tuple[bytes, Path, str]) -> None:
    r = payment_run(tmp_path / "r.json", keys[0])
    ok = _policy(tmp_path, f'[require]\nsignature = true\nsigners = ["{keys[2]}"]\n', "ok.toml")
    assert run_cli(r, "--policy", ok)[0] == 0
    forged = payment_run(tmp_path / "f.json", generate_key_pair()[0])
    code, out, _ = run_cli(forged, "--policy", ok, "--json")
    assert code == 1 and {"require.signers", "require.signature"} <= {v[0] for v in _violations(out)}


def test_allow_lists_name_the_steps_outside_them(tmp_path: Path, run_cli: Run) -> None:
    r = payment_run(tmp_path / "r.json", None, extra=lambda c: c.record("wire", {"arguments": {}}, agent="mallory"))
    p = _policy(tmp_path, '[allow]\nagents = ["user", "payments", "manager"]\ntools = ["pay", "lookup_*"]\n')
    code, out, _ = run_cli(r, "--policy", p, "--json")
    assert code == 1
    assert sorted(_violations(out)) == [("allow.agents", [5]), ("allow.tools", [5])]


def test_status_and_max_steps(tmp_path: Path, run_cli: Run) -> None:
    r = payment_run(tmp_path / "r.json", None)
    p = _policy(tmp_path, '[require]\nstatus = ["error"]\nmax_steps = 3\n')
    assert sorted(_violations(run_cli(r, "--policy", p, "--json")[1])) == [("require.max_steps", []),
                                                                           ("require.status", [])]


def test_in_policy_payment_passes_every_rule(tmp_path: Path, run_cli: Run) -> None:
    r = payment_run(tmp_path / "r.json", None)
    code, out, _ = run_cli(r, "--policy", _policy(tmp_path, PAY_RULES))
    assert code == 0, out
    assert "policy       PASS" in out


@pytest.mark.parametrize(("edit", "rule", "seqs"), [
    ({"approve": False}, "pay approved", [3]),
    ({"approval_call": "c9"}, "pay approved", [3]),
    ({"amount": 5000}, "pay cap", [3]),
])
def test_out_of_policy_payment_fails_its_rule(tmp_path: Path, run_cli: Run, edit: dict[str, Any], rule: str,
                                              seqs: list[int]) -> None:
    r = payment_run(tmp_path / "r.json", None, **edit)
    code, out, _ = run_cli(r, "--policy", _policy(tmp_path, PAY_RULES), "--json")
    assert code == 1 and _violations(out) == [(rule, seqs)]


def test_one_approval_lets_one_call_through(tmp_path: Path, run_cli: Run) -> None:
    def again(c: Collector) -> None:
        c.record("pay", pay_call('{"amount": 1, "payee": "acct_00112233"}'), agent="payments", call_id="c1")
    r = payment_run(tmp_path / "r.json", None, extra=again)
    violations = _violations(run_cli(r, "--policy", _policy(tmp_path, PAY_RULES), "--json")[1])
    assert ("pay approved", [5]) in violations and ("quiet after the end", [5]) in violations


def test_payee_pattern_and_step_counts(tmp_path: Path, run_cli: Run) -> None:
    def more(c: Collector) -> None:
        for i in range(3):
            c.record("code_execution", {"code": f"print({i})", "exit_code": 0}, agent="runner")
    c = Collector(goal="g")
    c.record("pay", pay_call({"amount": 1, "payee": "bob"}), agent="payments", call_id="c1")
    more(c)
    c.save(tmp_path / "r.json")
    p = _policy(tmp_path, PAY_RULES.replace('form = "approved_before"\ntool = "pay"', 'form = "approved_before"\n'
                                            'tool = "none"'))
    assert sorted(_violations(run_cli(tmp_path / "r.json", "--policy", p, "--json")[1])) == [
        ("payee form", [1]), ("two code runs", [4])]


def test_content_rule_without_evidence_fails_instead_of_passing(tmp_path: Path, run_cli: Run) -> None:
    r = payment_run(tmp_path / "r.json", None)
    Path(evidence_path_for(str(r))).unlink()
    violations = _violations(run_cli(r, "--policy", _policy(tmp_path, PAY_RULES), "--json")[1])
    assert ("pay approved", []) in violations and ("pay cap", []) in violations


@pytest.mark.unverified_receipts
def test_forged_evidence_cannot_bring_a_payment_under_the_cap(tmp_path: Path, run_cli: Run) -> None:
    r = payment_run(tmp_path / "r.json", None, amount=5000)
    ev = Path(evidence_path_for(str(r)))
    ev.write_text(ev.read_text().replace('"amount":5000', '"amount":50'))
    code, out, _ = run_cli(r, "--policy", _policy(tmp_path, PAY_RULES), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["failures"][0]["check"] == "evidence"
    assert ("pay cap", []) in _violations(out)


@pytest.mark.unverified_receipts
def test_a_policy_never_makes_an_invalid_receipt_valid(tmp_path: Path, run_cli: Run) -> None:
    r = payment_run(tmp_path / "r.json", None)
    wf = json.loads(r.read_text())
    wf["goal"] = "edited"
    r.write_text(json.dumps(wf))
    empty = _policy(tmp_path, "")
    assert run_cli(r, "--policy", empty)[0] == 1
    assert run_cli(r, "--policy", _policy(tmp_path, PAY_RULES, "rules.toml"))[0] == 1


@pytest.mark.parametrize(("body", "says"), [
    ("[[rule]]\nname = 'x'\nform = 'sometimes'\n", "unknown rule form"),
    ("[[rule]]\nname = 'x'\nform = 'at_most'\nkind = 'message'\ncount = 1\ntoll = 3\n", "unknown member 'toll'"),
    ("[require]\nchian = true\n", "unknown member 'chian'"),
    ("[require\nchain = true\n", "not a TOML file"),
    ("[[rule]]\nname = 'x'\nform = 'argument'\ntool = 'pay'\nargument = 'amount'\n", "needs max, min or pattern"),
    ("[[rule]]\nname = 'x'\nform = 'argument'\ntool = 'pay'\nargument = 'a'\npattern = '('\n", "not a regular"),
    ("[require]\nsigners = ['abc']\n", "want key ids"),
])
def test_unusable_policy_is_a_usage_error(tmp_path: Path, run_cli: Run, body: str, says: str) -> None:
    r = payment_run(tmp_path / "r.json", None)
    p = _policy(tmp_path, body)
    code, out, err = run_cli(r, "--policy", p)
    assert (code, out) == (2, "") and says in err and len(err.splitlines()) == 1, err
    code, out, _ = run_cli(r, "--policy", p, "--json")
    assert code == 2 and says in json.loads(out)["error"]


def test_policy_without_format_line_is_refused(tmp_path: Path, run_cli: Run) -> None:
    r = payment_run(tmp_path / "r.json", None)
    p = tmp_path / "p.toml"
    p.write_text("[require]\nchain = true\n")
    assert run_cli(r, "--policy", p)[0] == 2
    assert run_cli(r, "--require", "chain,nonsense")[0] == 2


def test_demo_receipt_passes_the_demo_policy_and_fails_the_strict_one(tmp_path: Path, run_cli: Run,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "agentchat_team.py"
    monkeypatch.syspath_prepend(str(example.parent))  # as when the example runs as a script: its helpers beside it
    spec = importlib.util.spec_from_file_location("agentchat_team_example_policy", example)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(tmp_path) == 0
    receipt, key = tmp_path / "receipt.json", tmp_path / "signing.pub"
    code, out, _ = run_cli("--policy", POLICIES / "demo.toml", "--key", key, receipt)
    assert code == 0, out
    code, out, _ = run_cli("--policy", POLICIES / "strict.toml", "--key", key, receipt, "--json")
    assert code == 1
    rules = {v[0] for v in _violations(out)}
    assert {"require.timestamp", "require.signers", "every tool call approved first"} <= rules


def test_outputs_follow_the_verdict_schema(tmp_path: Path, run_cli: Run, verdict_schema: Any) -> None:
    (tmp_path / "a").mkdir()
    r = payment_run(tmp_path / "a" / "r.json", None, amount=5000)
    payment_run(tmp_path / "a" / "s.json", None)
    p = _policy(tmp_path, PAY_RULES)
    for args in ([r, "--policy", p], [tmp_path / "a", "--policy", p], [tmp_path / "a", "--only-failures"],
                 [tmp_path / "nothing"], [r, "--policy", tmp_path / "missing.toml"]):
        _, out, _ = run_cli(*args, "--json")
        verdict_schema.validate(json.loads(out))


def _calls(tmp_path: Path, steps: list[tuple[str, dict[str, Any], str | None]]) -> Path:
    c = Collector(goal="variants")
    for tool, content, call_id in steps:
        c.record(tool, content, agent="payments", call_id=call_id)
    return Path(c.save(tmp_path / "v.json"))


_APPROVED = {"decision": "approved", "tool": "pay"}
_PAY = pay_call({"amount": 1, "payee": "acct_00112233"})


def test_a_content_that_predates_the_vocabulary_is_said_so_not_guessed(tmp_path: Path, run_cli: Run) -> None:
    r = _calls(tmp_path, [("approval", _APPROVED, "c1"),
                          ("pay", {"arguments": '{"amount": 1, "payee": "acct_00112233"}'}, "c1")])
    code, out, _ = run_cli(r, "--policy", _policy(tmp_path, PAY_RULES), "--json")
    assert code == 1 and ("pay cap", [2]) in _violations(out)
    messages = [f["message"] for f in json.loads(out)["failures"] if f.get("rule") == "pay cap"]
    assert any("predates the step vocabulary (aer1-steps/1" in m for m in messages), messages
    assert verify_receipt(r).valid  # old contents still verify: only the rule needs their shape


@pytest.mark.parametrize(("steps", "rule", "seqs"), [
    ([("pay", _PAY, "c1"), ("approval", _APPROVED, "c1")], "pay approved", [1]),  # approved only afterwards
    ([("approval", {"decision": "approved", "tool": "wire"}, "c1"), ("pay", _PAY, "c1")], "pay approved", [2]),
    ([("approval", {"decision": "pending", "tool": "pay"}, "c1"), ("pay", _PAY, "c1")], "pay approved", [2]),
    ([("approval", _APPROVED, None), ("pay", _PAY, "c1")], "pay approved", [2]),  # no call id on the approval
    ([("approval", _APPROVED, "c1"), ("pay", pay_call({"amount": True, "payee": "acct_00112233"}), "c1")],
     "pay cap", [2]),  # a boolean is not a number
    ([("approval", _APPROVED, "c1"), ("pay", pay_call("{not json"), "c1")], "pay cap", [2]),
    ([("approval", _APPROVED, "c1"), ("pay", pay_call({"payee": "acct_00112233"}), "c1")], "pay cap", [2]),
])
def test_rule_variants_that_must_fail(tmp_path: Path, run_cli: Run, steps: list[Any], rule: str,
                                      seqs: list[int]) -> None:
    r = _calls(tmp_path, steps)
    violations = _violations(run_cli(r, "--policy", _policy(tmp_path, PAY_RULES), "--json")[1])
    assert (rule, seqs) in violations, violations


def test_code_approval_without_call_ids_in_the_autogen_core_form(tmp_path: Path, run_cli: Run) -> None:
    rules = '[[rule]]\nname = "code approved"\nform = "approved_before"\nkind = "code_execution"\n'
    ok = _calls(tmp_path, [("approval", {"approved": True, "code": "print(1)"}, None),
                           ("code_execution", {"code": "print(1)"}, None)])
    assert run_cli(ok, "--policy", _policy(tmp_path, rules))[0] == 0
    denied = _calls(tmp_path, [("approval", {"approved": False, "code": "print(1)"}, None),
                               ("code_execution", {"code": "print(1)"}, None)])
    out = run_cli(denied, "--policy", _policy(tmp_path, rules), "--json")[1]
    assert _violations(out) == [("code approved", [2])]
    assert "the approval at step 1 was not approved" in json.loads(out)["failures"][0]["message"]


_PAY_ARGS = {"amount": 1, "payee": "acct_00112233"}


@pytest.mark.parametrize(("approval", "ran"), [
    ({**_APPROVED, "arguments": {**_PAY_ARGS, "amount": 1}}, {"arguments": {**_PAY_ARGS, "amount": 900}}),
    ({**_APPROVED, "arguments": json.dumps(_PAY_ARGS)}, {"arguments": {**_PAY_ARGS, "payee": "acct_99999999"}}),
    ({**_APPROVED, "arguments": {**_PAY_ARGS, "amount": 1}}, {"arguments": {**_PAY_ARGS, "amount": 1.5}}),
    ({**_APPROVED, "arguments": _PAY_ARGS, "arguments_digest": "a" * 64},
     {"arguments": _PAY_ARGS, "arguments_digest": "b" * 64}),  # the gate's digests decide when both have them
])
def test_an_approval_for_other_arguments_does_not_let_the_call_through(
    tmp_path: Path, run_cli: Run, approval: dict[str, Any], ran: dict[str, Any]
) -> None:
    r = _calls(tmp_path, [("approval", approval, "c1"), ("pay", ran, "c1")])
    out = run_cli(r, "--policy", _policy(tmp_path, PAY_RULES), "--json")[1]
    assert ("pay approved", [2]) in _violations(out)
    messages = [f["message"] for f in json.loads(out)["failures"] if f.get("rule") == "pay approved"]
    assert any("the approval at step 1 approved other arguments" in m for m in messages), messages


def test_the_same_arguments_in_another_spelling_are_the_approved_ones(tmp_path: Path, run_cli: Run) -> None:
    spelled = '{ "payee":"acct_00112233",  "amount": 1 }'
    r = _calls(tmp_path, [
        ("approval", {**_APPROVED, "arguments": {**_PAY_ARGS, "amount": 7}}, "c1"),  # another call's approval
        ("approval", {**_APPROVED, "arguments": spelled}, "c1"),
        ("pay", {"arguments": _PAY_ARGS}, "c1"),
    ])
    assert "pay approved" not in {v[0] for v in _violations(run_cli(r, "--policy", _policy(tmp_path, PAY_RULES),
                                                                      "--json")[1])}


def _two_runs(tmp_path: Path, extra_in_first_quiet: bool) -> Path:
    c = Collector(goal="two runs")
    for run in range(2):
        c.record("task", {"task": f"run {run}"}, agent="user", kind="task")
        c.record("reply", {"text": "ok"}, agent="writer", kind="message")
        c.record("end", {"reason": "done"}, agent="team", kind="termination")
        if extra_in_first_quiet and run == 0:
            c.record("late", {"text": "after the end"}, agent="writer", kind="message")
    return Path(c.save(tmp_path / "two.json"))


QUIET = '[[rule]]\nname = "quiet"\nform = "none_after"\nkind = "*"\n'


def test_none_after_without_until_holds_the_whole_receipt_quiet(tmp_path: Path, run_cli: Run) -> None:
    r = _two_runs(tmp_path, extra_in_first_quiet=False)
    assert _violations(run_cli(r, "--policy", _policy(tmp_path, QUIET), "--json")[1]) == [("quiet", [4, 5, 6])]


def test_none_after_until_a_new_task_checks_each_run_on_its_own(tmp_path: Path, run_cli: Run) -> None:
    until = QUIET + 'until = "task"\n'
    clean = _two_runs(tmp_path, extra_in_first_quiet=False)
    assert _violations(run_cli(clean, "--policy", _policy(tmp_path, until), "--json")[1]) == []
    late = _two_runs(tmp_path, extra_in_first_quiet=True)
    out = run_cli(late, "--policy", _policy(tmp_path, until), "--json")[1]
    assert _violations(out) == [("quiet", [4])]
    assert "after the termination at step 3" in json.loads(out)["failures"][0]["message"]


@pytest.mark.parametrize("until", ["t*", "*", "termination", "close", "no_such_kind"])
def test_an_until_that_would_end_every_quiet_part_is_refused(tmp_path: Path, run_cli: Run, until: str) -> None:
    r = _two_runs(tmp_path, extra_in_first_quiet=True)
    code, out, _ = run_cli(r, "--policy", _policy(tmp_path, QUIET + f'until = "{until}"\n'), "--json")
    assert code == 2
    assert "until: got" in json.loads(out)["error"]
