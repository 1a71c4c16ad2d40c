"""Receipts for the policy and archive tests, recorded through the core collector API."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1 import _steps_vocab as vocab
from aer1._signing import generate_key_pair, key_id, load_public_key
from aer1.verifier._cli import main as verify_main

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "spec" / "verdict-schema.json"
POLICIES = Path(__file__).resolve().parents[2] / "examples" / "policies"


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Path, str]:
    """A signing key: (private PEM, path of its public key, its key id)."""
    private, public = generate_key_pair()
    pub = tmp_path_factory.mktemp("keys") / "ops.pub"
    pub.write_bytes(public)
    return private, pub, key_id(load_public_key(public))


def pay_call(arguments: Any, call_id: str = "c1") -> dict[str, Any]:
    """A ``pay`` tool call's content in the step vocabulary (spec/steps.md)."""
    return vocab.tool_call("groupchat", name="pay", call_id=call_id, arguments=arguments, result="paid")


def payment_run(path: Path, private: bytes | None, *, amount: float = 120, approve: bool = True,
                approval_call: str = "c1", extra: Callable[[Collector], None] | None = None) -> Path:
    """A payment workflow: task, approval (groupchat form), the pay tool call, termination; saved."""
    c = Collector(goal="pay the invoice", signing_key=private)
    c.record("task", {"task": "pay invoice 7"}, agent="user")
    c.record("approval", vocab.approval("groupchat", decision="approved" if approve else "denied", name="pay",
                                        call_id=approval_call, arguments={"amount": amount, "payee": "acct_00112233"},
                                        extras={"approval_id": "apr_1", "reason": "ok", "edited": False}),
             agent="payments", call_id=approval_call)
    c.record("pay", vocab.tool_call("groupchat", name="pay", call_id="c1", result="paid",
                                    arguments=json.dumps({"amount": amount, "payee": "acct_00112233"})),
             agent="payments", call_id="c1")
    c.record("termination", {"reason": "done"}, agent="manager")
    if extra is not None:
        extra(c)
    c.save(path)
    return path


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """``aer1-verify`` in-process: (exit code, stdout, stderr)."""

    def run(*args: Any) -> tuple[int, str, str]:
        code = verify_main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def verdict_schema() -> Any:
    """A validator for spec/verdict-schema.json (itself checked against its metaschema)."""
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def write_policy(folder: Path, body: str) -> Path:
    """A policy file holding ``body`` after the format line."""
    path = folder / "policy.toml"
    path.write_text('format = "aer1-policy-v1"\n' + body)
    return path


def policy_failures(out: str) -> list[tuple[str, str]]:
    """(rule, message) of each failure of the policy check in a ``--json`` verdict."""
    return [(f["rule"], f["message"]) for f in json.loads(out)["failures"] if f["check"] == "policy"]
