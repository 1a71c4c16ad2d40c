"""A log at a URL the verifier cannot reach: a log problem naming the failure, never "missing" and never bare."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from aer1.verifier._cli import main

from .helpers import make_log


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Failing(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def failing_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/log"
    finally:
        server.shutdown()
        server.server_close()


def _log_problems(capsys: pytest.CaptureFixture[str], url: str, vkey: Path) -> list[str]:
    code = main(["--log", url, "--log-key", str(vkey), "--json"])
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert code == 2 and doc["exit_code"] == 2 and "Traceback" not in out.err
    assert doc["kind"] == "log" and doc["log"]["verdict"] == "MALFORMED", doc
    problems: list[str] = doc["log"]["problems"]
    return problems


def test_a_refused_connection_is_not_a_missing_checkpoint(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Trial: --log http://127.0.0.1:PORT with nothing listening said "checkpoint ... missing" (fsspec names a
    refused connection FileNotFoundError); now the problem names the connection failure."""
    _, vkey, _, _ = make_log(tmp_path, 1)
    url = f"http://127.0.0.1:{_free_port()}/log"
    [problem] = _log_problems(capsys, url, vkey)
    assert "missing" not in problem and "not found" not in problem, problem
    assert f"{url}/checkpoint: cannot read" in problem and "127.0.0.1" in problem


def test_a_server_error_is_not_a_missing_checkpoint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, failing_server: str
) -> None:
    """Trial: a log server answering HTTP 500 was reported as a missing checkpoint."""
    _, vkey, _, _ = make_log(tmp_path, 1)
    [problem] = _log_problems(capsys, failing_server, vkey)
    assert "missing" not in problem and "not found" not in problem, problem
    assert "500" in problem


def test_a_storage_that_connects_when_made_is_a_log_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Trial: --log ftp://127.0.0.1:PORT/ printed the bare "Connection refused" as the run's error, naming
    neither the log nor the URL, and without the log section; now it is the checkpoint's problem."""
    _, vkey, _, _ = make_log(tmp_path, 1)
    url = f"ftp://127.0.0.1:{_free_port()}/log"
    [problem] = _log_problems(capsys, url, vkey)
    assert problem.startswith(f"checkpoint: {url}/checkpoint: cannot read") and "refused" in problem, problem
