"""Marking: dotted and pointer paths, wildcards, list indices, a predicate; nested runs; refused options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1._canonical import canonical_bytes
from aer1._commit import COMMIT_TAG, commit_content, marker_for, parse_path, pointer

CONTENT = {
    "arguments": {"email": "a@example.com", "name": "Al", "n": 1},
    "result": {"customer": {"name": "Alice", "email": "b@example.com"}, "items": [{"email": "c@example.com"}]},
    "a.b": {"c/d": "x"},
}


def _committed(personal: Any) -> list[str]:
    marked = marker_for(personal)
    assert marked is not None
    _, disclosures = commit_content(canonical_bytes(CONTENT), marked)
    return [d[1] for d in disclosures]


@pytest.mark.parametrize(("personal", "paths"), [
    (["arguments.email"], ["/arguments/email"]),
    (["result.customer.name"], ["/result/customer/name"]),
    (["*.email"], ["/arguments/email"]),
    (["**.email"], ["/arguments/email", "/result/customer/email", "/result/items/0/email"]),
    (["arguments.*"], ["/arguments/email", "/arguments/n", "/arguments/name"]),
    (["result.items.0.email"], ["/result/items/0/email"]),
    (["result.items.*"], ["/result/items/0"]),
    (["result.customer", "result.customer.name"], ["/result/customer"]),  # the outermost is committed whole
    (["/a.b/c~1d"], ["/a.b/c~1d"]),
    (["no.such.field"], []),
    (lambda path, value: value == "Alice", ["/result/customer/name"]),
    (lambda path, value: path[-1:] == (0,), ["/result/items/0"]),
])
def test_paths_and_predicates(personal: Any, paths: list[str]) -> None:
    assert _committed(personal) == paths


def test_pointer_round_trip() -> None:
    assert pointer(("a/b", "~", 0)) == "/a~1b/~0/0"
    assert parse_path("/a~1b/~0/0") == ("a/b", "~", "0")
    assert parse_path("a.b.0") == ("a", "b", "0")


@pytest.mark.parametrize("bad", ["", "a..b", ".a"])
def test_bad_paths_are_refused_at_construction(bad: str) -> None:
    with pytest.raises(ValueError):
        Collector("g", personal=[bad])


@pytest.mark.parametrize("bad", ["arguments.email", 5, b"x"])
def test_personal_must_be_a_list_or_a_callable(bad: Any) -> None:
    with pytest.raises(TypeError):
        Collector("g", personal=bad)


def test_nothing_marked_leaves_the_bytes(tmp_path: Path) -> None:
    marked = marker_for(["nothing"])
    assert marked is not None
    data = canonical_bytes(CONTENT)
    assert commit_content(data, marked) == (data, [])


def test_a_nested_run_commits_as_its_parent(tmp_path: Path) -> None:
    parent = Collector("outer", personal=["arguments.email"])
    child = parent.child("inner")
    child.record("lookup", {"arguments": {"email": "a@example.com"}})
    receipt = child.finalize()
    path = child.save(str(tmp_path / "child.json"), workflow=receipt)
    evidence = Path(path).with_name("child.evidence.jsonl").read_text()
    assert COMMIT_TAG in evidence and "a@example.com" not in evidence
    lines = Path(path).with_name("child.disclosures.jsonl").read_text().splitlines()
    assert json.loads(lines[1])["disclosure"][1:] == ["/arguments/email", "a@example.com"]
    assert child.verify(receipt) == []


def test_a_tagged_value_is_committed_whole_and_wrapped_objects_are_looked_through() -> None:
    content = {"arguments": {"$aer1:weird": 1, "email": "a@example.com"}, "big": 2**70}
    marked = marker_for(["arguments.email", "big"])
    assert marked is not None
    out, disclosures = commit_content(canonical_bytes(content), marked)
    assert [d[1] for d in disclosures] == ["/arguments/email", "/big"]
    assert disclosures[1][2] == {"$aer1:int": str(2**70)}
    assert json.loads(out)["arguments"]["$aer1:object"]["$aer1:weird"] == 1
    c = Collector("g", personal=["arguments.email", "big"])
    c.record("lookup", content)
    assert c.verify() == []
