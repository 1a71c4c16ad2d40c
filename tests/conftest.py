"""Shared fixtures: the receipt invariant, and the real peer verifiers from PyPI (tests only).

Every receipt finalized during a test is saved with its evidence and checked with the
real ``aer1-verify`` command line after the test (``tests/receipt_invariant.py``); a test
that builds broken receipts on purpose is marked ``unverified_receipts``.

The peers (``aer1-verify`` 0.2.19 and ``aer1-autogen`` 0.1.15) are installed by ``make``
with ``pip install --no-deps --target tests/.peers``, never into the project's environment:
the peer ships its own ``aer1-verify`` console script, which would shadow ours. Only the
interop tests need them; under ``CI=true`` a missing peer is an error, never a skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from .receipt_invariant import OPT_OUT_MARKER, noting_receipts, unverified
from .receipts import Peers

# Property tests check what holds, never how fast: a loaded machine must not fail them on
# Hypothesis's per-example deadline (speed is measured by the scripts under bench/).
settings.register_profile("aer1", deadline=None)
settings.load_profile("aer1")

PEER_DIR = Path(__file__).parent / ".peers"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{OPT_OUT_MARKER}: the test makes receipts that must not verify (skips the receipt invariant)"
    )


@pytest.fixture(autouse=True)
def every_receipt_verifies(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """After each test, every receipt it finalized verifies with ``aer1-verify`` (evidence included)."""
    if request.node.get_closest_marker(OPT_OUT_MARKER) is not None:
        yield
        return
    with noting_receipts() as log:
        yield
    if log.finalized:
        problems = unverified(log, tmp_path_factory.mktemp("receipts"))
        if problems:
            pytest.fail("receipts produced by this test do not verify:\n" + "\n".join(problems), pytrace=False)


def _peer_problem() -> str | None:
    """Why the peers in PEER_DIR cannot be used (``make`` installs them), or None."""
    if (PEER_DIR / "aer1_verify.py").exists() and (PEER_DIR / "aer1_autogen").is_dir():
        return None
    return f"not installed in {PEER_DIR.name} (run make)"


@pytest.fixture(scope="session")
def peer_dir() -> Path:
    """The folder holding the peer packages, for the interop tests (skipped without it, failed under CI)."""
    problem = _peer_problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"peer verifiers unavailable under CI: {problem}")
        pytest.skip(f"peer verifiers unavailable: {problem}")
    return PEER_DIR


@pytest.fixture(scope="session")
def peers(request: pytest.FixtureRequest) -> Peers | None:
    """Both peer verifiers for the collector suites, or None outside CI when they are not installed.

    Our own checks in those suites run either way; only the extra peer assertions need them.
    """
    problem = _peer_problem()
    if problem is None:
        return Peers(request.getfixturevalue("peer_verify_cli"), request.getfixturevalue("peer_verify_workflow"))
    if os.environ.get("CI") == "true":
        pytest.fail(f"peer verifiers unavailable under CI: {problem}")
    return None


@pytest.fixture(scope="session")
def peer_verify_cli(peer_dir: Path) -> Callable[[str | os.PathLike[str]], tuple[int, str]]:
    """Run the peer's real ``aer1-verify`` 0.2.19 CLI on a receipt file: (exit code, stdout)."""
    script = peer_dir / "bin" / "aer1-verify"

    def run(path: str | os.PathLike[str]) -> tuple[int, str]:
        env = {**os.environ, "PYTHONPATH": str(peer_dir)}
        done = subprocess.run([sys.executable, str(script), os.fspath(path)], capture_output=True,
                              text=True, env=env, timeout=120)
        return done.returncode, done.stdout + done.stderr

    return run


@pytest.fixture(scope="session")
def peer_module(peer_dir: Path) -> Any:
    """The peer collector package ``aer1_autogen`` 0.1.15, imported from the target folder."""
    if str(peer_dir) not in sys.path:
        sys.path.append(str(peer_dir))
    import aer1_autogen

    return aer1_autogen


@pytest.fixture(scope="session")
def peer_verify_workflow(peer_dir: Path) -> Callable[[dict[str, Any]], list[str]]:
    """``aer1_autogen.verify_workflow_receipt`` from the peer: failure reasons, [] when valid.

    Loaded from the peer's ``collector.py`` by path: that file needs only the standard
    library, while the package's ``__init__`` imports autogen-agentchat, which the ag2
    environment does not have.
    """
    spec = importlib.util.spec_from_file_location(
        "_peer_aer1_autogen_collector", peer_dir / "aer1_autogen" / "collector.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def run(receipt: dict[str, Any]) -> list[str]:
        return list(module.verify_workflow_receipt(json.loads(json.dumps(receipt))))

    return run


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Dask's and storage's tests run last: a distributed client, the S3 server and s3fs's I/O loop
    leave threads behind, and a process with threads never forks, so the cut path (tests/perf)
    would silently not run after them."""
    items.sort(key=lambda item: any(f"tests/{d}/" in item.nodeid.replace("\\", "/") for d in ("dask", "storage")))
