"""Archive runs on Dask: one process, ``--jobs 2`` and a Dask cluster of 2 workers, side by side.

Usage: ``python bench/bench_dask.py [--receipts N] [--steps N] [--s3-receipts N] [--rounds N]``

Makes a folder of N signed receipts of ``--steps`` steps with their evidence (bench_archive's
generator), then times, each in a fresh ``aer1-verify`` process and in one run:

* ``--jobs 1``; then ``--rounds`` rounds of ``--jobs 2``, ``--dask ADDRESS`` on a LocalCluster
  of 2 worker processes started beforehand with the settings ``--dask local`` uses (the
  cluster's start is timed apart) and ``--dask local -j 2`` (start included), each Dask run
  right after a ``--jobs 2`` run so that a ratio is of two runs under one load (the machine
  may be shared); and one pair on a cluster with Dask's default worker settings (profiler,
  20 ms tick), as an external cluster has unless configured; the load average before and after;
* the scheduler's cost per task: many empty tasks through the same cluster, one at a time
  in flight per worker as the verifier keeps them;
* the same archive (its first ``--s3-receipts``) in moto's S3 server on 127.0.0.1 (an S3
  emulator, reached by ``--storage-options``): ``--jobs 1`` and Dask on 2 workers,
  receipts per second per worker, and the bytes and requests read per receipt;

then the model of bench/README.md with the measured points: the time for 10^7 receipts of
50 steps on N machines of W workers, and the smallest batch that keeps the scheduler below
5 % of the work. Not part of ``run_all.py``: a run of 20,000 receipts takes several minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _table import machine

RECEIPTS = 20_000
STEPS = 50
S3_RECEIPTS = 2_000
#: Rounds of ``--jobs 2`` then Dask, one after the other: each ratio is of two runs under one load.
ROUNDS = 2
WORKERS = 2
_TIMEOUT_S = 7200
_EMPTY_TASKS = 2_000
#: The model's archive: 10^7 receipts of 50 steps; the scheduler's share it aims below.
MODEL_RECEIPTS = 10_000_000
SCHEDULER_SHARE = 0.05
#: Requests per receipt read from storage: a GET of the receipt and one of its evidence (the files
#: looked for beside it are found in one listing of the folder per worker, a request per 1,000 objects).
REQUESTS_PER_RECEIPT = "2 + 1/1000 per worker"


def _noop(batch: int) -> int:
    return batch


def _cluster_cpu(procs: list[Any]) -> tuple[float, float]:
    """CPU seconds used so far by this process (the scheduler, the nannies) and by ``procs`` (its workers, psutil)."""
    self = resource.getrusage(resource.RUSAGE_SELF)
    workers = 0.0
    for p in procs:
        t = p.cpu_times()
        workers += t.user + t.system
    return self.ru_utime + self.ru_stime, workers


def _run(argv: list[str], cluster: list[Any] | None = None) -> tuple[float, float, list[float]]:
    """Wall and CPU seconds of ``aer1-verify argv`` (output discarded); it must exit 0 (every receipt valid).

    CPU: the process and the processes it started, plus, with ``cluster``, what the cluster
    (its workers, and its scheduler in this process) used meanwhile: the machine's whole cost of
    the run; and that CPU in parts: [the client and its children, the scheduler's process, the workers].
    """
    before, side = resource.getrusage(resource.RUSAGE_CHILDREN), _cluster_cpu(cluster) if cluster else (0.0, 0.0)
    t = time.perf_counter()
    code = subprocess.run([sys.executable, "-m", "aer1.verifier._cli", *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=_TIMEOUT_S).returncode
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    parts = [after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime]
    if cluster:
        parts += [b - a for a, b in zip(side, _cluster_cpu(cluster), strict=True)]
    if code != 0:
        raise RuntimeError(f"aer1-verify {' '.join(argv[:4])}... exited {code}: not every receipt verified")
    return wall, sum(parts), parts


def _time(argv: list[str]) -> float:
    """Wall seconds of ``aer1-verify argv``."""
    return _run(argv)[0]


def _pair(jobs2: list[str], dask: list[str], cluster: list[Any], **more: list[str]) -> dict[str, Any]:
    """``--jobs 2`` then Dask on ``cluster``'s processes (then each of ``more``): wall and CPU seconds of each."""
    out: dict[str, Any] = {}
    for key, argv, procs in (("jobs2", jobs2, None), ("dask", dask, cluster),
                             *((k, v, None) for k, v in more.items())):
        out[f"{key}_s"], out[f"{key}_cpu_s"], out[f"{key}_cpu_parts"] = _run(argv, procs)
    return out


def _workers() -> list[Any]:
    """The processes this process started: its LocalCluster's workers (the scheduler runs here)."""
    import psutil

    return list(psutil.Process().children(recursive=True))


def _task_cost(client: Any) -> tuple[float, float]:
    """Seconds per empty task: (all submitted at once: the scheduler's throughput cost; kept ahead
    as the verifier keeps them: that plus the round trips the window does not hide)."""
    from aer1.verifier._dask import _AHEAD_PER_WORKER

    t = time.perf_counter()
    client.gather(client.map(_noop, range(_EMPTY_TASKS), pure=False))
    at_once = (time.perf_counter() - t) / _EMPTY_TASKS
    ahead = WORKERS * _AHEAD_PER_WORKER
    t = time.perf_counter()
    pending = []
    for i in range(_EMPTY_TASKS):
        pending.append(client.submit(_noop, i, pure=False))
        if len(pending) >= ahead:
            pending.pop(0).result()
    for f in pending:
        f.result()
    return at_once, (time.perf_counter() - t) / _EMPTY_TASKS


def _s3(folder: Path, count: int, client: Any) -> dict[str, Any]:
    """The first ``count`` receipts in moto's S3 server: timings, bytes and requests per receipt."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        s3 = boto3.client("s3", endpoint_url=endpoint)
        s3.create_bucket(Bucket="bench")
        receipts = sorted(folder.rglob("run*.json"))[:count]
        read = 0
        for r in receipts:
            for f in (r, r.with_suffix(".evidence.jsonl")):
                s3.put_object(Bucket="bench", Key=f"archive/{f.name}", Body=f.read_bytes())
                read += f.stat().st_size
        t = time.perf_counter()
        for r in receipts:  # the emulator's own rate: the same GETs, nothing verified
            for f in (r, r.with_suffix(".evidence.jsonl")):
                s3.get_object(Bucket="bench", Key=f"archive/{f.name}")["Body"].read()
        boto = time.perf_counter() - t
        opts = json.dumps({"endpoint_url": endpoint})
        url = "s3://bench/archive/"
        one = _time(["--storage-options", opts, "-j", "1", url])
        dask = _time(["--storage-options", opts, "--dask", client.scheduler.address, url])
        return {"receipts": len(receipts), "one_s": one, "dask_s": dask, "boto3_s": boto,
                "bytes_per_receipt": read / len(receipts)}
    finally:
        server.stop()


def _load() -> str:
    """The load average (1, 5, 15 min): the machine may be shared, so every run says it."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def _cluster(quiet: bool) -> Any:
    """A LocalCluster of 2 workers: the one ``--dask local`` starts, or one with Dask's default settings."""
    import distributed

    from aer1.verifier._dask import local_cluster

    environ = dict(os.environ)
    try:
        if quiet:
            return local_cluster(WORKERS)
        return distributed.LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, host="127.0.0.1",
                                        dashboard_address=None)
    finally:
        # each Nanny sets its workers' variables (MALLOC_TRIM_THRESHOLD_...) in this process's own
        # environment: put it back, or every later run (--jobs 2 too) and cluster would inherit them
        os.environ.clear()
        os.environ.update(environ)


def run(receipts: int, steps: int, s3_receipts: int, rounds: int = ROUNDS) -> dict[str, Any]:
    """Every measured point of one run: ``--jobs 2`` timed just before each Dask run, so each pair sees one load."""
    import distributed

    # the emulator's dummy credentials, set before the cluster starts: its workers read them as a user's would
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1")
    work = Path(tempfile.mkdtemp(prefix="aer1-bench-dask-"))
    try:
        folder = work / "archive"
        folder.mkdir()
        subprocess.run([sys.executable, str(Path(__file__).with_name("bench_archive.py")), "--generate",
                        str(folder), str(receipts), str(steps)], check=True, timeout=_TIMEOUT_S)
        out: dict[str, Any] = {"receipts": receipts, "steps": steps, "load_start": _load()}
        out["one_s"] = _time(["-j", "1", str(folder)])
        jobs2 = ["-j", str(WORKERS), str(folder)]
        cluster = _cluster(quiet=False)  # Dask's default settings: what an external cluster has unless told otherwise
        try:
            out["default"] = [_pair(jobs2, ["--dask", cluster.scheduler_address, str(folder)], _workers())]
        finally:
            cluster.close()
        t = time.perf_counter()
        cluster = _cluster(quiet=True)
        client = distributed.Client(cluster)
        out["cluster_start_s"] = time.perf_counter() - t
        try:
            out["rounds"] = []
            for _ in range(rounds):
                out["rounds"].append(_pair(jobs2, ["--dask", cluster.scheduler_address, str(folder)],
                                           _workers(), dask_local=["--dask", "local", *jobs2]))
            out["task_s"], out["task_windowed_s"] = _task_cost(client)
            if s3_receipts:
                out["s3"] = _s3(folder, min(s3_receipts, receipts), client)
        finally:
            client.close()
            cluster.close()
        out["load_end"] = _load()
        # the table's points: each the median of its rounds
        for key in ("jobs2_s", "dask_s", "dask_local_s", "jobs2_cpu_s", "dask_cpu_s", "dask_local_cpu_s"):
            out[key] = statistics.median(r[key] for r in out["rounds"])
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(m: dict[str, Any]) -> str:
    """The measured points side by side, and the model's predictions from them."""
    from aer1.verifier._dask import DASK_BATCH, DASK_MAX_BATCH

    n = m["receipts"]
    cost = m["one_s"] / n  # one receipt's verification in one process (start-up spread over the run)
    lines = [f"{n:,} receipts of {m['steps']} steps, signed, with evidence, on local disk. {machine()}; "
             f"load average {m['load_start']} at the start, {m['load_end']} at the end.", "",
             "Each Dask run right after a --jobs 2 run (ratio of the pair); wall seconds, and CPU seconds of "
             "every process of the run (client, workers, scheduler):", "",
             "| round | --jobs 2 wall / CPU | Dask, cluster up: wall / CPU | ratio wall / CPU "
             "| --dask local -j 2: wall / CPU | ratio wall / CPU |",
             "|---|---:|---:|---:|---:|---:|"]

    def cells(r: dict[str, float], key: str) -> str:
        return (f"{r[key + '_s']:.1f} / {r[key + '_cpu_s']:.1f} | {r[key + '_s'] / r['jobs2_s']:.2f}× / "
                f"{r[key + '_cpu_s'] / r['jobs2_cpu_s']:.2f}×")

    for i, r in enumerate(m["rounds"], 1):
        lines.append(f"| {i} | {r['jobs2_s']:.1f} / {r['jobs2_cpu_s']:.1f} | {cells(r, 'dask')} | "
                     f"{cells(r, 'dask_local')} |")
    for r in m["default"]:
        lines.append(f"| Dask's default worker settings | {r['jobs2_s']:.1f} / {r['jobs2_cpu_s']:.1f} | "
                     f"{cells(r, 'dask')} | | |")
    lines += ["", "CPU seconds of the runs on the cluster already up: the client / the scheduler's process "
              "(with the nannies) / the workers:", ""]
    for name, r in (*((f"round {i}", r) for i, r in enumerate(m["rounds"], 1)), ("default settings", m["default"][0])):
        client, sched, workers = r["dask_cpu_parts"]
        lines.append(f"- {name}: {client:.2f} / {sched:.2f} / {workers:.2f} "
                     f"(--jobs 2 just before: {r['jobs2_cpu_s']:.2f})")
    ratio = statistics.median(r["dask_s"] / r["jobs2_s"] for r in m["rounds"])
    cpu_ratio = statistics.median(r["dask_cpu_s"] / r["jobs2_cpu_s"] for r in m["rounds"])
    lines += ["", "Medians of the rounds:", "", "| run | wall (s) | receipts/s | / --jobs 2 |", "|---|---:|---:|---:|"]
    for name, key in (("one process (-j 1)", "one_s"), ("--jobs 2", "jobs2_s"),
                      ("Dask, 2 workers (cluster already up)", "dask_s"),
                      ("Dask, --dask local -j 2 (cluster start included)", "dask_local_s")):
        lines.append(f"| {name} | {m[key]:.1f} | {n / m[key]:,.0f} | {m[key] / m['jobs2_s']:.2f}× |")
    over = (m["dask_s"] - m["jobs2_s"]) / n
    lines += ["", f"LocalCluster start: {m['cluster_start_s']:.1f} s. Dask's overhead per receipt against --jobs 2: "
              f"{over * 1e6:+.0f} µs of {m['jobs2_s'] / n * 1e6:.0f} µs (wall per receipt, 2 workers); "
              f"target within 15 %: {'met' if ratio <= 1.15 else 'NOT met'} (median ratio {ratio - 1:+.1%}; "
              f"of CPU seconds {cpu_ratio - 1:+.1%}).",
              f"Per empty task: {m['task_s'] * 1e3:.2f} ms submitted all at once (the scheduler's cost, s), "
              f"{m['task_windowed_s'] * 1e3:.2f} ms with {_ahead()} in flight as the verifier keeps them; "
              f"per-receipt cost c = {cost * 1e3:.2f} ms (one process)."]
    if "s3" in m:
        s = m["s3"]
        lines += ["", f"From moto's S3 server (an emulator on 127.0.0.1), {s['receipts']:,} receipts:", "",
                  "| run | wall (s) | receipts/s | receipts/s per worker | bytes read / receipt | requests / receipt |",
                  "|---|---:|---:|---:|---:|---:|"]
        for name, key, workers in (("one process (-j 1)", "one_s", 1), ("Dask, 2 workers", "dask_s", WORKERS)):
            rate = s["receipts"] / s[key]
            lines.append(f"| {name} | {s[key]:.1f} | {rate:,.0f} | {rate / workers:,.0f} | "
                         f"{s['bytes_per_receipt']:,.0f} | {REQUESTS_PER_RECEIPT} |")
        lines.append(f"| the emulator alone: boto3 GETs of the same objects, one thread | {s['boto3_s']:.1f} | "
                     f"{s['receipts'] / s['boto3_s']:,.0f} | | {s['bytes_per_receipt']:,.0f} | 2 |")
    task = m["task_s"]
    lines += ["", f"Model (bench/README.md), R = 10^7 receipts, c = {cost * 1e3:.2f} ms, s = {task * 1e3:.2f} ms, "
              f"tasks of {DASK_BATCH} to {DASK_MAX_BATCH} receipts as the verifier sizes them (the mean B in the "
              "table): work R·c/(N·W) in parallel, the scheduler's tasks·s in series; T = max of the two.", "",
              "| machines N × workers W | tasks (mean B) | work | scheduler | predicted T | scheduler / T "
              "| B for scheduler < 5 % |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for machines, workers in ((1, 2), (1, 16), (10, 16), (100, 16)):
        nw = machines * workers
        count = tasks_for(MODEL_RECEIPTS, nw)
        work = MODEL_RECEIPTS * cost / nw
        sched = count * task
        t = max(work, sched)
        lines.append(f"| {machines} × {workers} | {count:,} ({MODEL_RECEIPTS / count:,.0f}) | {work / 3600:.2f} h | "
                     f"{sched / 3600:.2f} h | {t / 3600:.2f} h | {sched / t:.1%} | "
                     f"{task * nw / (SCHEDULER_SHARE * cost):,.0f} |")
    lines += ["", f"The scheduler's cost is below 5 % of the work itself when s/(B·c) < 0.05: B > "
              f"{task / (SCHEDULER_SHARE * cost):.1f}; below 5 % of the wall time on N·W workers when "
              "B > 20·s·N·W/c (last column)."]
    return "\n".join(lines)


def tasks_for(receipts: int, workers: int) -> int:
    """How many tasks the verifier sends for ``receipts`` on ``workers`` (its guided batch sizes)."""
    from aer1.verifier._dask import _AHEAD_PER_WORKER, batch_size

    left, count = receipts, 0
    while left > 0:
        left -= batch_size(left, workers * _AHEAD_PER_WORKER)
        count += 1
    return count


def _ahead() -> int:
    from aer1.verifier._dask import _AHEAD_PER_WORKER

    return WORKERS * _AHEAD_PER_WORKER


def main(argv: list[str] | None = None) -> int:
    """Generate, measure, print."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--receipts", type=int, default=RECEIPTS)
    p.add_argument("--steps", type=int, default=STEPS)
    p.add_argument("--s3-receipts", type=int, default=S3_RECEIPTS, help="receipts read from the S3 emulator (0: none)")
    p.add_argument("--json", metavar="FILE", help="also write the measured points as JSON")
    p.add_argument("--rounds", type=int, default=ROUNDS, help="pairs of --jobs 2 and Dask runs")
    args = p.parse_args(argv)
    m = run(args.receipts, args.steps, args.s3_receipts, max(1, args.rounds))
    if args.json:
        Path(args.json).write_text(json.dumps(m, indent=2) + "\n")
    print(report(m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
