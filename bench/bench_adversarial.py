"""Adversarial inputs at the size limit: each verified or refused in bounded time and memory.

Writes each file into a temporary folder (one at a time, deleted right after its run), runs
the real ``aer1-verify --json`` on it in a fresh process and reports the wall time and the
peak resident memory of that process (``wait4``). A benchmark, not a test: the targets
(60 s, 512 MiB at 2 GiB) are printed beside the numbers, never asserted by the test suite.

    python bench/bench_adversarial.py            # every file at the 2 GiB input limit
    python bench/bench_adversarial.py --size-mib 256
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from aer1._collector import Collector
from aer1._limits import MAX_INPUT_BYTES

_MiB = 1024 * 1024
TARGET_S = 60.0
TARGET_RSS_MIB = 512
_WRITE_CHUNK = 64 * _MiB
Body = Callable[[int], Iterator[bytes]]


def _repeat(unit: bytes, size: int) -> Iterator[bytes]:
    """``unit`` repeated to ``size`` bytes, written in large chunks."""
    block = unit * max(1, _WRITE_CHUNK // len(unit))
    left = size - size % len(unit)
    while left > 0:
        piece = block[:left]
        yield piece
        left -= len(piece)


def _framed(head: bytes, unit: bytes, tail: bytes) -> Body:
    def body(size: int) -> Iterator[bytes]:
        yield head
        yield from _repeat(unit, size - len(head) - len(tail))
        yield tail

    return body


#: name -> a generator of the file's bytes for a given total size.
FILES: dict[str, Body] = {
    "one_long_string": _framed(b'{"type":"verifiable-workflow-receipt","goal":"', b"a", b'"}'),
    "whitespace": _framed(b"{", b" ", b'"steps":[]}'),
    "one_long_number": _framed(b'{"goal":1.', b"1", b"}"),
    "many_empty_objects_array": _framed(b"[", b"{},", b"{}]"),
    "many_empty_objects_member": _framed(b'{"agents":[', b"{},", b"{}]}"),
    "many_empty_steps": _framed(b'{"steps":[', b"{},", b"{}]}"),
}


#: Runs aer1-verify and writes the process's own peak RSS (VmHWM: this process image only,
#: unlike ru_maxrss, which also counts the parent's memory copied before exec) to stderr.
_CHILD = """
import sys
from aer1.verifier._cli import main
code = main(sys.argv[1:])
with open("/proc/self/status") as f:
    sys.stderr.write(next(line for line in f if line.startswith("VmHWM:")))
sys.exit(code)
"""


def _run(args: list[str]) -> tuple[float, float, int, str]:
    """(seconds, peak RSS in MiB, exit code, verdict) of one ``aer1-verify`` process."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CHILD, *args, "--json"], capture_output=True, check=False)
    seconds = time.perf_counter() - start
    try:
        verdict = str(json.loads(done.stdout).get("verdict"))
    except ValueError:
        verdict = "(no JSON)"
    kib = int(done.stderr.decode().rsplit("VmHWM:", 1)[-1].split()[0])
    return seconds, kib / 1024, done.returncode, verdict


def _row(name: str, size: int, seconds: float, rss: float, code: int, verdict: str) -> str:
    ok = "yes" if seconds <= TARGET_S and rss <= TARGET_RSS_MIB and code in (1, 2) else "NO"
    return f"| {name:<28} | {size / _MiB:>8.0f} | {verdict:<9} | {code:>4} | {seconds:>7.2f} | {rss:>8.0f} | {ok:^6} |"


def main(argv: list[str] | None = None) -> int:
    """Run every adversarial file; print a Markdown table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mib", type=int, default=MAX_INPUT_BYTES // _MiB, help="file size (default: the limit)")
    args = p.parse_args(argv)
    size = args.size_mib * _MiB
    print(f"targets: {TARGET_S:.0f} s and {TARGET_RSS_MIB} MiB peak RSS per file; exit 1 or 2 expected\n")
    print("| file                         |      MiB | verdict   | exit |       s | peak MiB | within |")
    print("|------------------------------|---------:|-----------|-----:|--------:|---------:|:------:|")
    folder = tempfile.mkdtemp(prefix="aer1-bench-adversarial-")
    failed = 0
    try:
        for name, body in FILES.items():
            free = shutil.disk_usage(folder).free
            if free < size * 2:
                print(f"| {name:<28} | skipped: {free / _MiB:.0f} MiB free on the temp disk |")
                continue
            path = Path(folder, f"{name}.json")
            with open(path, "wb") as f:
                for piece in body(size):
                    f.write(piece)
            result = _run([str(path)])
            path.unlink()
            print(_row(name, size, *result), flush=True)
            failed += "NO" in _row(name, size, *result)
        # an honest receipt whose evidence is a sparse file with no newline (no disk used)
        c = Collector(goal="sparse evidence")
        c.record("tool", {"ok": True})
        receipt = c.save(Path(folder, "honest.json"))
        with open(Path(folder, "honest.evidence.jsonl"), "wb") as f:
            f.truncate(7 * 1024 * _MiB)
        result = _run([receipt])
        print(_row("sparse_7GiB_evidence", 7 * 1024 * _MiB, *result), flush=True)
        failed += "NO" in _row("sparse_7GiB_evidence", 7 * 1024 * _MiB, *result)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
