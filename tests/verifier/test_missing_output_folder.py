"""New user: an output named in a folder that does not exist.

``aer1 report archive/ -o site/index.html``, as the README shows it, failed on a fresh
machine with ``No such file or directory: site/index-0001.html.tmp-...``: a temporary
name the user never chose, and nothing saying what to do. Every writer (``aer1 prove``,
``report``, ``keygen``, ``recover``, ``Collector.save``) now names the missing folder and
says to create it; ``aer1 report`` of a folder writes a site, so it makes the folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aer1 import Collector

from ..cli_runs import Run


def _one_line_naming(err: str, folder: Path) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"got {lines}, want one line"
    assert f"the folder {folder} does not exist: create it first" in lines[0], f"got {lines[0]}"
    assert ".tmp-" not in lines[0] and "Traceback" not in err, f"got {lines[0]}, want no temporary name"


@pytest.mark.parametrize("command", [
    ["prove", "{receipt}", "--step", "1", "-o", "{out}/step1.proof.json"],
    ["report", "{receipt}", "-o", "{out}/report.html"],
    ["keygen", "-o", "{out}/ops"],
    ["recover", "{receipt}", "-o", "{out}/recovered.json"],
])
def test_missing_output_folder_named_in_one_line(tmp_path: Path, receipt: Path, run_aer1: Run,
                                                 command: list[str]) -> None:
    missing = tmp_path / "no-such-folder"
    code, _, err = run_aer1(*(a.format(receipt=receipt, out=missing) for a in command))
    assert code == 2, f"got exit {code}, want 2"
    _one_line_naming(err, missing)
    assert not missing.exists(), "got the folder made, want nothing written"


def test_collector_save_names_the_missing_folder(tmp_path: Path) -> None:
    c = Collector(goal="save into a folder that is not there")
    c.record("lookup", {"result": "x"}, agent="alice")
    missing = tmp_path / "gone"
    with pytest.raises(FileNotFoundError, match=r"the folder .*gone does not exist: create it first"):
        c.save(missing / "receipt.json", workflow=c.finalize("done"))
    assert not missing.exists()


def test_report_of_a_folder_makes_its_site_folder(tmp_path: Path, receipt: Path, run_aer1: Run) -> None:
    site = tmp_path / "site" / "nested"
    code, out, err = run_aer1("report", receipt.parent, "-o", site / "index.html")
    assert code == 0, f"got exit {code} ({err.strip()}), want 0"
    assert (site / "index.html").is_file() and (site / "index-0001.html").is_file(), \
        f"got {sorted(p.name for p in site.iterdir())}, want the index and one page"
    assert "1 valid" in out, f"got {out!r}"


def test_report_site_under_a_file_is_one_line(tmp_path: Path, receipt: Path, run_aer1: Run) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code, _, err = run_aer1("report", receipt.parent, "-o", blocker / "site" / "index.html")
    assert code == 2, f"got exit {code}, want 2"
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, f"got {err!r}"
