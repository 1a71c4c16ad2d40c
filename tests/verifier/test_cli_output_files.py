"""Trial: --junit FILE and --attest KEY -o FILE replaced a FIFO (or, as root, /dev/stdout) with a regular file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from aer1._signing import generate_key_pair

from ..cli_runs import Run


@pytest.fixture
def auditor_key(tmp_path: Path) -> Path:
    private, _ = generate_key_pair()
    path = tmp_path / "auditor.key"
    path.write_bytes(private)
    return path


def _outputs(auditor_key: Path, target: Path) -> list[tuple[str, list[str]]]:
    return [("--junit", ["--junit", str(target)]), ("-o", ["--attest", str(auditor_key), "-o", str(target)])]


@pytest.mark.parametrize("option", ["--junit", "-o"])
def test_output_that_is_a_fifo_is_refused_and_left_alone(option: str, tmp_path: Path, receipt: Path,
                                                         auditor_key: Path, run_cli: Run) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    args = dict(_outputs(auditor_key, fifo))[option]
    code, out, err = run_cli(receipt, *args)
    assert (code, out, err.count("\n")) == (2, "", 1), (out, err)
    assert f"{option} {fifo}: " in err and "not a regular file" in err, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
    code, out, _ = run_cli(receipt, *args, "--json")
    assert (code, json.loads(out)["verdict"]) == (2, "MALFORMED"), out


@pytest.mark.parametrize("option", ["--junit", "-o"])
def test_output_in_a_missing_folder_is_a_usage_error(option: str, tmp_path: Path, receipt: Path,
                                                     auditor_key: Path, run_cli: Run) -> None:
    args = dict(_outputs(auditor_key, tmp_path / "missing" / "out"))[option]
    code, _, err = run_cli(receipt, *args)
    assert (code, err.count("\n")) == (2, 1) and "internal error" not in err, err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("option", ["--junit", "-o"])
def test_output_written_whole_with_the_usual_mode(option: str, tmp_path: Path, receipt: Path, auditor_key: Path,
                                                  run_cli: Run) -> None:
    target = tmp_path / "out"
    target.write_text("an older report")
    code, _, err = run_cli(receipt, *dict(_outputs(auditor_key, target))[option])
    assert code == 0, err
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o666 & ~umask
    assert target.read_text().startswith("<?xml" if option == "--junit" else "{"), target.read_text()[:80]
    assert [n for n in os.listdir(tmp_path) if ".tmp-" in n or n.startswith(".junit-")] == []


@pytest.mark.parametrize("option", ["--junit", "-o"])
def test_json_output_stays_one_document_when_the_output_cannot_be_written(
        option: str, tmp_path: Path, receipt: Path, auditor_key: Path, run_cli: Run) -> None:
    args = dict(_outputs(auditor_key, tmp_path / "missing" / "out"))[option]
    code, out, _ = run_cli(receipt, *args, "--json")
    doc = json.loads(out)  # one document: the error, not a report followed by the error
    assert (code, doc["verdict"]) == (2, "MALFORMED") and "cannot create a file in" in doc["error"], out
