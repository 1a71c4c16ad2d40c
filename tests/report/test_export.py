"""``aer1 show --csv`` and ``--jsonl``: one row per step with its content's fields; formulas never reach a sheet."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from aer1 import Collector
from aer1._export import COLUMNS, CSV_CELL_CHARS, neutralise
from tests.report.conftest import save, shapes_collector
from tests.report.test_page import run


def test_csv_has_a_row_per_step_with_its_fields(tmp_path: Path) -> None:
    path = save(shapes_collector(), tmp_path)
    code, out, err = run(["show", "--csv", str(path)])
    assert code == 0 and err.startswith("verdict: VALID"), err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert tuple(rows[0]) == COLUMNS and len(rows) == 10
    assert [r["seq"] for r in rows] == [str(n) for n in range(1, 11)]
    tool = rows[2]
    assert (tool["kind"], tool["tool"], tool["arguments"], tool["error"], tool["result"]) == (
        "tool_call", "get_weather", '{"city": "Atlantis"}', "no such city", "")
    assert rows[3]["result"] == "rain\nthen sun" and rows[4]["error"] == "upstream timed out"
    assert (rows[7]["choice"], rows[7]["mechanism"], rows[6]["target"]) == ("carol", "round_robin", "carol")
    assert all(r["content_matches"] == "true" for r in rows[:-1])


def test_jsonl_carries_the_whole_content_as_recorded(tmp_path: Path) -> None:
    c = Collector(goal="g")
    c.record("message", {"content": "caf\udead", "big": 2**70}, agent="alice")
    code, out, err = run(["show", "--jsonl", str(save(c, tmp_path))])
    assert code == 0 and err.startswith("verdict: VALID")
    lines = out.splitlines()
    assert all(line.isascii() for line in lines), "want ASCII lines (a lone surrogate as its escape)"
    first = json.loads(lines[0])
    assert first["seq"] == 1 and first["text"] == "caf\udead" and first["content_matches"] is True
    assert first["content"]["big"] != 2**70, "want the content as recorded (its tag), not restored"
    assert set(first) == {*COLUMNS, "content"}


@pytest.mark.parametrize("cell", ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_formula_cells_are_neutralised(cell: str, tmp_path: Path) -> None:
    assert neutralise(cell) == "'" + cell
    c = Collector(goal="g")
    c.record("lookup", {"arguments": {"q": cell}, "result": cell, "is_error": False}, agent=cell, kind="tool_call")
    code, out, _ = run(["show", "--csv", str(save(c, tmp_path))])
    row = next(csv.DictReader(io.StringIO(out)))
    assert code == 0 and row["agent"] == "'" + cell and row["result"] == "'" + cell, row
    assert not any(v.startswith(("=", "+", "-", "@", "\t", "\r")) for v in row.values()), row


def test_a_huge_cell_is_cut_to_a_spreadsheet_cell(tmp_path: Path) -> None:
    c = Collector(goal="g")
    c.record("message", {"content": "y" * (CSV_CELL_CHARS + 10)}, agent="a")
    _, out, _ = run(["show", "--csv", str(save(c, tmp_path))])
    text = next(csv.DictReader(io.StringIO(out)))["text"]
    assert text.startswith("y" * CSV_CELL_CHARS) and text.endswith("[10 more characters not shown]")


@pytest.mark.parametrize("flags", [["--csv", "--json"], ["--csv", "--jsonl"], ["--jsonl", "--follow"]])
def test_export_flags_go_one_at_a_time(flags: list[str], tmp_path: Path) -> None:
    code, out, err = run(["show", *flags, str(save(shapes_collector(), tmp_path))])
    assert code == 2 and "Traceback" not in out + err
    if "--json" in flags:  # --json stays JSON
        assert "one at a time" in json.loads(out)["error"]
    else:
        assert len(err.strip().splitlines()) == 1 and "one at a time" in err, err
