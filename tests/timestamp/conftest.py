"""Fixtures for timestamps and keyrings: two real local TSAs (trusted, untrusted), keys, a recorded run."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1._cli import main as aer1_cli
from aer1.verifier._cli import main as verify_cli

from ..cli_runs import run_cli  # noqa: F401 (a fixture for the tests here)
from .tsa import LocalTSA, make_pki


@pytest.fixture(scope="session")
def trusted_pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Root, intermediate and TSA certificate of the TSA the auditor trusts."""
    return make_pki(tmp_path_factory.mktemp("trusted-pki"), "Trusted")


@pytest.fixture(scope="session")
def untrusted_pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second, unrelated PKI: a TSA the auditor has never heard of."""
    return make_pki(tmp_path_factory.mktemp("untrusted-pki"), "Rogue")


@pytest.fixture(scope="session")
def tsa_roots(tmp_path_factory: pytest.TempPathFactory, trusted_pki: Path) -> Path:
    """The auditor's ``--tsa-roots`` folder: the trusted root and its intermediate."""
    folder = tmp_path_factory.mktemp("tsa-roots")
    shutil.copy(trusted_pki / "root.crt", folder / "root.crt")
    shutil.copy(trusted_pki / "intermediate.crt", folder / "intermediate.pem")
    return folder


# The servers live for one test module: a server thread left running would keep later tests'
# verifiers from forking (they fork only when one thread runs).
@pytest.fixture(scope="module")
def tsa(trusted_pki: Path) -> Iterator[LocalTSA]:
    """The trusted TSA, serving on 127.0.0.1."""
    server = LocalTSA(trusted_pki)
    yield server
    server.close()


@pytest.fixture(scope="module")
def rogue_tsa(untrusted_pki: Path) -> Iterator[LocalTSA]:
    """A TSA whose root the auditor does not trust."""
    server = LocalTSA(untrusted_pki)
    yield server
    server.close()


def record_run(**options: Any) -> Collector:
    """A collector with a short multi-agent run recorded (not finalized)."""
    c = Collector(goal="Plan the product launch", **options)
    c.register_agent("alice", type="AssistantAgent", description="planner", config={"model": "m1"})
    c.record("task", {"task": "Plan the product launch"}, agent="user")
    c.record("message", {"type": "TextMessage", "content": "draft"}, agent="alice", reply_to="user")
    c.record("lookup", {"arguments": {"q": "dates"}, "result": [1, 2], "is_error": False}, agent="alice",
             call_id="call_1")
    return c


def save_run(folder: Path, name: str = "receipt", **options: Any) -> tuple[Path, dict[str, Any]]:
    """Record, finalize and save a run; returns the receipt's path and the receipt."""
    c = record_run(**options)
    receipt = c.finalize(final_answer="done")
    path = folder / f"{name}.json"
    c.save(str(path), workflow=receipt)
    return path, receipt


Cli = Callable[..., tuple[int, str, str]]


def _run(main: Callable[[list[str]], int], *args: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def verify() -> Cli:
    """``aer1-verify ARGS`` in process: (exit code, stdout, stderr)."""
    return lambda *args: _run(verify_cli, *args)


@pytest.fixture
def aer1() -> Cli:
    """``aer1 ARGS`` in process: (exit code, stdout, stderr)."""
    return lambda *args: _run(aer1_cli, *args)


def checks_of(out: str) -> dict[str, dict[str, Any]]:
    """The checks of one ``aer1-verify --json`` report, by name."""
    return {c["name"]: c for c in json.loads(out)["checks"]}
