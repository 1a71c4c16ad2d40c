"""``aer1-verify --dask``: an archive verified on a real Dask LocalCluster (worker processes on 127.0.0.1).

Results must equal ``aer1-verify -j 1`` field for field; a worker killed mid-run must not
lose or double a receipt; an unreachable scheduler is one line and exit 2, within the timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aer1 import Collector
from aer1.verifier import _dask
from aer1.verifier._cli import main
from aer1.verifier.dask import verify_archive
from tests.helpers import KEYS

BIN = Path(sys.executable).parent
TRUSTED = str(KEYS / "trusted.pub")


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 200 small files: valid signed receipts, tampered ones, unreadable bytes, JSON that is no receipt."""
    root = tmp_path_factory.mktemp("archive")
    seeds = []
    for i in range(8):
        c = Collector(goal=f"run {i}", signing_key=str(KEYS / "trusted.key"))
        c.register_agent("alice", type="AssistantAgent")
        for n in range(3 + i):
            c.record("message", {"n": n, "i": i}, agent="alice")
        seeds.append(Path(c.save(root / f"seed-{i}.json")))
    for k in range(150):  # valid copies, each with its evidence beside it
        src = seeds[k % len(seeds)]
        dst = root / f"sub{k % 3}" / f"valid-{k:03}.json"
        dst.parent.mkdir(exist_ok=True)
        shutil.copy(src, dst)
        shutil.copy(src.with_suffix(".evidence.jsonl"), dst.with_suffix(".evidence.jsonl"))
    for k in range(20):
        text = seeds[k % len(seeds)].read_text().replace('"alice"', '"mallory"', 1)
        (root / f"tampered-{k:02}.json").write_text(text)
    for k in range(12):
        (root / f"unreadable-{k:02}.json").write_bytes(b"\xff{not json" * (k + 1))
    for k in range(10):
        (root / f"not-a-receipt-{k:02}.json").write_text(json.dumps({"hello": k}))
    return root


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    # imported here, not at collection: importing distributed starts a native thread, and a process
    # with threads never forks, so the cut path (tests/perf) would not run after it
    import distributed

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _cli(*args: str) -> tuple[int, str]:
    done = subprocess.run([str(BIN / "aer1-verify"), *args], capture_output=True, text=True, timeout=180)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout


def test_the_archive_has_every_kind_of_file(archive: Path) -> None:
    code, out = _cli("--json", "-j", "1", "--key", TRUSTED, str(archive))
    doc = json.loads(out)
    assert code == 2
    assert doc["summary"]["VALID"] == 158 and doc["summary"]["INVALID"] == 20
    assert doc["summary"]["MALFORMED"] == 22


def test_dask_json_equals_one_process_field_for_field(archive: Path, client: object) -> None:
    address = client.scheduler.address  # type: ignore[attr-defined]
    one = _cli("--json", "-j", "1", "--key", TRUSTED, str(archive))
    on = _cli("--json", "--dask", address, "--key", TRUSTED, str(archive))
    assert on[0] == one[0] == 2
    assert json.loads(on[1]) == json.loads(one[1])


def test_a_fixed_task_size_gives_the_same_json(archive: Path, client: object) -> None:
    address = client.scheduler.address  # type: ignore[attr-defined]
    one = _cli("--json", "-j", "1", "--key", TRUSTED, str(archive))
    on = _cli("--json", "--dask", address, "--dask-batch", "7", "--key", TRUSTED, str(archive))
    assert on[0] == one[0] == 2 and json.loads(on[1]) == json.loads(one[1])


@pytest.mark.parametrize("args, says", [(["--dask-batch", "5"], "--dask-batch goes with --dask"),
                                        (["--dask", "local", "--dask-batch", "0"], "want a positive number")])
def test_a_bad_task_size_is_one_line_and_exit_2(archive: Path, args: list[str], says: str) -> None:
    done = subprocess.run([str(BIN / "aer1-verify"), *args, str(archive / "sub0")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_dask_lines_junit_and_signed_summary_equal_one_process(archive: Path, client: object,
                                                               tmp_path: Path) -> None:
    address = client.scheduler.address  # type: ignore[attr-defined]
    runs = {}
    for name, how in (("one", ["-j", "1"]), ("dask", ["--dask", address])):
        out = tmp_path / name
        out.mkdir()
        code, text = _cli(*how, "--key", TRUSTED, "--junit", str(out / "junit.xml"), "--attest",
                          str(KEYS / "trusted.key"), "-o", str(out / "summary.json"), str(archive))
        summary = json.loads((out / "summary.json").read_text())
        runs[name] = (code, text, (out / "junit.xml").read_text(), summary)
    one, dask = runs["one"], runs["dask"]
    assert dask[:2] == one[:2]
    assert dask[2] == one[2]
    strip = ("signature", "created", "generated_at", "time")
    same = [{k: v for k, v in s.items() if k not in strip} for s in (one[3], dask[3])]
    assert same[0].keys() == same[1].keys()
    files = json.dumps(same[1], sort_keys=True)
    assert files.count("valid-000.json") == 1  # each file named once
    checks = [_cli("--summary", str(tmp_path / n / "summary.json"), "--key", TRUSTED)[0] for n in ("one", "dask")]
    assert checks[0] == checks[1] == 1  # both re-check to the archive's verdict, the signature good


def test_dask_local_starts_its_own_cluster(archive: Path) -> None:
    one = _cli("--json", "-j", "1", str(archive / "sub0"))
    local = _cli("--json", "--dask", "local", "-j", "2", str(archive / "sub0"))
    assert local[0] == one[0] == 0
    assert json.loads(local[1]) == json.loads(one[1])


_WORKER_TRIM = """
import os
from aer1.verifier._dask import close, connect
client = connect("local", 1)
try:
    print(list(client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_", "unset")).values()))
finally:
    close(client)
"""


def test_dask_local_workers_get_no_malloc_trim_threshold() -> None:
    """Dask's Nanny sets MALLOC_TRIM_THRESHOLD_=65536 in each worker by default (memory handed back and
    faulted in again for every receipt); the workers ``--dask local`` starts are left glibc's own setting."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}  # a cluster here set it
    done = subprocess.run([sys.executable, "-c", _WORKER_TRIM], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['unset']"


def test_keyring_is_shipped_as_data_not_as_a_client_path(archive: Path, client: object, tmp_path: Path) -> None:
    ring = tmp_path / "keyring.json"
    opts = _dask.ArchiveOptions(keyring=str(ring), run_id="x")
    ring.write_text("{}")
    sent, shipped = _dask.ship(opts)
    assert sent.keyring is None and shipped == (("keyring", b"{}"),)


def test_python_api_yields_outcomes_in_order(archive: Path, client: object) -> None:
    outs = list(verify_archive(client, archive, trusted_key_ids=None, batch=16))
    _, text = _cli("--json", "-j", "1", str(archive))
    want = [r["source"] for r in json.loads(text)["results"]]
    got = [o.report.source for o in outs if o.skipped is None]
    assert got == want


def test_a_worker_killed_mid_run_loses_and_doubles_nothing(archive: Path, client: object) -> None:
    want = [(o.report.source, o.report.verdict) for o in verify_archive(client, archive, batch=200)]
    pids = list(client.run(os.getpid).values())  # type: ignore[attr-defined]
    got = []
    for i, o in enumerate(verify_archive(client, archive, batch=4)):
        got.append((o.report.source, o.report.verdict))
        if i == 8:
            os.kill(pids[0], signal.SIGKILL)
    assert got == want
    assert len({s for s, _ in got}) == len(got)
    client.wait_for_workers(2, timeout=60)  # type: ignore[attr-defined]  # the nanny restarted it


def test_an_unreachable_scheduler_is_one_line_and_exit_2(archive: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    monkeypatch.setattr(_dask, "CONNECT_TIMEOUT", 2.0)
    start = time.monotonic()
    code = main(["--dask", f"tcp://127.0.0.1:{port}", str(archive / "sub0")])
    assert time.monotonic() - start < 30
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "cannot reach the scheduler" in err, err


def test_dask_with_one_receipt_or_stdin_is_refused(archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dask", "local", str(archive / "seed-0.json")]) == 2
    assert main(["--dask", "local", "-"]) == 2
    assert "--dask" in capsys.readouterr().err


def test_the_log_completeness_walk_runs_on_dask(tmp_path: Path, client: object) -> None:
    """``--log --complete`` with ``--dask``: the log trust travels to the workers (its parsed keys do not
    pickle), and the walk's section and every receipt's log check equal a run in one process."""
    from tests.tlog.helpers import make_log

    log, vkey, archive, paths = make_log(tmp_path, 5)
    paths[0].unlink()  # one receipt the log lists is missing from the archive
    address = client.scheduler.address  # type: ignore[attr-defined]
    common = ("--json", "--log", str(log), "--log-key", str(vkey), "--complete", str(archive))
    one = _cli(*common, "-j", "1")
    on = _cli(*common, "--dask", address)
    assert on[0] == one[0] == 1
    doc = json.loads(on[1])
    assert doc == json.loads(one[1])
    assert doc["log"]["complete"]["missing"]["count"] == 1
    assert [next(c for c in r["checks"] if c["name"] == "log")["status"] for r in doc["results"]] == ["PASS"] * 4


def test_a_long_run_on_guided_task_sizes_keeps_every_file_once_in_order(archive: Path, client: object,
                                                                        tmp_path: Path) -> None:
    """1,300 files: the first tasks are larger than the smallest size; each file comes back once, in order."""
    seed, tampered = archive / "seed-0.json", archive / "tampered-00.json"
    big = tmp_path / "big"
    big.mkdir()
    for k in range(1300):
        src = tampered if k % 97 == 5 else seed
        shutil.copy(src, big / f"r{k:04}.json")
    workers = len(client.scheduler_info()["workers"])  # type: ignore[attr-defined]
    assert _dask.batch_size(1300, workers * 4) > _dask.DASK_BATCH  # the run does take larger tasks
    outs = list(verify_archive(client, big, trusted_key_ids=None))
    assert [Path(o.report.source or "").name for o in outs] == [f"r{k:04}.json" for k in range(1300)]
    want = ["INVALID" if k % 97 == 5 else "VALID" for k in range(1300)]
    assert [o.report.verdict for o in outs] == want
