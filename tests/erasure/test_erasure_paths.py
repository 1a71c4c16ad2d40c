"""Committed fields are checked alike on every verification path: in memory, split over processes, streamed."""

from __future__ import annotations

from pathlib import Path

import pytest

from aer1 import Collector
from aer1.verifier._driver import verify_on_paths
from aer1.verifier._paths import DEFAULT_PATHS, Paths

STEPS = 4000  # a receipt file over 1 MiB: verified split over processes with jobs=2


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = Collector("many steps", personal=["arguments.email"])
    for i in range(STEPS):
        c.record("lookup", {"arguments": {"email": f"user{i}@example.com", "n": i}})
    path = Path(c.save(str(tmp_path_factory.mktemp("paths") / "r.json")))
    assert path.stat().st_size > 1 << 20
    return path


@pytest.mark.parametrize("way", ["memory", "split", "stream"])
def test_every_path_checks_commitments(saved: Path, way: str, tmp_path: Path) -> None:
    paths = Paths(stream_min_bytes=1024) if way == "stream" else DEFAULT_PATHS
    jobs = 2 if way == "split" else 1
    report = verify_on_paths(str(saved), jobs=jobs, paths=paths)
    assert report.verdict == "VALID" and report.to_dict()["fields"]["disclosed"] == STEPS, report.to_text()
    # The same receipt with one disclosure edited, in a folder of its own.
    for name in ("r.json", "r.evidence.jsonl"):
        (tmp_path / name).write_bytes(saved.with_name(name).read_bytes())
    lines = saved.with_name("r.disclosures.jsonl").read_bytes().split(b"\n")
    lines[STEPS // 2] = lines[STEPS // 2].replace(b"@example.com", b"@example.org")
    (tmp_path / "r.disclosures.jsonl").write_bytes(b"\n".join(lines))
    report = verify_on_paths(str(tmp_path / "r.json"), jobs=jobs, paths=paths)
    assert report.verdict == "INVALID"
    assert report.failures[0].seq == STEPS // 2 and "does not match its commitment" in report.failures[0].reason
