"""Fuzzing the commands: no receipt, evidence, proof, journal or argument gives a traceback.

Every run must exit 0, 1 or 2; a problem is one line on standard error (with ``--json``,
one JSON object on standard output); the commands' last guard ("internal error") must
never be what answered. The commands run in-process through ``main(argv)``; a few real
subprocess runs check the console scripts too.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aer1 import Collector
from aer1._cli import main as aer1_main
from aer1.verifier._cli import main as verify_main

from ..helpers import KEYS, make_collector

BIN = Path(sys.executable).parent
_BIG = "\x00big-integer\x00"  # stands for an integer literal over 4300 digits (json.dumps cannot write one)
_BIG_TEXT = "1" + "0" * 5000
_FUZZ = settings(max_examples=int(os.environ.get("AER1_FUZZ_EXAMPLES", "60")), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


class _Files(dict[str, bytes]):
    """The honest files, with a short repr (hypothesis prints its arguments on failure)."""

    def __repr__(self) -> str:
        return f"<honest {', '.join(self)}>"


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The files of one honest run: signed receipt, evidence, a proof, a finalized journal."""
    folder = tmp_path_factory.mktemp("honest")
    receipt = Path(make_collector(signing_key=KEYS / "trusted.key").save(folder / "r.json"))
    with contextlib.redirect_stdout(io.StringIO()):
        assert aer1_main(["prove", str(receipt), "--step", "2", "-o", str(folder / "r2.proof.json")]) == 0
    journaled = Collector(goal="journaled", journal=folder / "run.journal")
    journaled.register_agent("alice", type="AssistantAgent")
    journaled.record("message", {"content": "hi", "n": [1, 2]}, agent="alice")
    journaled.finalize("done")
    return _Files({
        "receipt": receipt.read_bytes(),
        "evidence": (folder / "r.evidence.jsonl").read_bytes(),
        "proof": (folder / "r2.proof.json").read_bytes(),
        "journal": (folder / "run.journal").read_bytes(),
    })


def _run(main: Callable[[list[str]], int], argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _check(main: Callable[[list[str]], int], argv: list[str]) -> tuple[int, str, str]:
    """Run a command and hold it to the contract; returns (code, stdout, stderr)."""
    code, out, err = _run(main, argv)
    assert code in (0, 1, 2), f"got exit code {code!r}, want 0, 1 or 2 (argv {argv!r})"
    assert "Traceback" not in out + err
    assert "internal error" not in out + err, f"the last guard answered: {err or out}"
    if "--json" in argv:
        assert isinstance(json.loads(out), dict), f"got {out[:200]!r}, want one JSON object"
    elif code == 2:
        assert len(err.splitlines()) <= 1, f"got {err!r}, want at most one line on standard error"
    return code, out, err


# ------------------------------------------------------------------ mutations

_ODD = st.sampled_from([
    _BIG, "-" + _BIG, "caf\udead", "\ud800", "\U0001f600", "", "\x00", 1.0, -0.0, 1e308, 2**64, -(2**53) - 1,
    [], {}, [[]], {"": None}, None, True, 0, -1, 2**53, "0" * 64, "z" * 70,
])
_VALUES = st.recursive(
    _ODD | st.text(max_size=12) | st.integers() | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6) | _ODD.filter(
        lambda v: isinstance(v, str)), inner, max_size=3),
    max_leaves=6,
)


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*at, i))


def _replace(doc: Any, path: Sequence[Any], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _replace(doc[head], rest, value)}
    return [_replace(v, rest, value) if i == head else v for i, v in enumerate(doc)]


def _dump(doc: Any, ascii_only: bool) -> bytes:
    text = json.dumps(doc, ensure_ascii=ascii_only).replace(json.dumps(_BIG, ensure_ascii=ascii_only), _BIG_TEXT)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def _mutated_json(draw: st.DrawFn, data: bytes) -> bytes:
    """A JSON document with one value replaced, a member renamed or dropped, or its bytes cut or spliced."""
    doc = json.loads(data)
    how = draw(st.sampled_from(["replace", "rename", "drop", "bytes"]))
    paths = list(_paths(doc))
    path = draw(st.sampled_from(paths))
    if how == "replace":
        doc = _replace(doc, path, draw(_VALUES))
    elif how in ("rename", "drop") and path:
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        if isinstance(parent, dict):
            value = parent.pop(path[-1])
            if how == "rename":
                parent[draw(_ODD.filter(lambda v: isinstance(v, str)) | st.text(max_size=6))] = value
        else:
            del parent[path[-1]]
    else:
        raw = bytearray(data)
        at = draw(st.integers(0, len(raw)))
        cut = draw(st.integers(0, 40))
        raw[at:at + cut] = draw(st.binary(max_size=12) | st.sampled_from([b"\xff", b"\xed\xa0\x80", b"{", b"]"]))
        return bytes(raw)
    return _dump(doc, draw(st.booleans()))


@st.composite
def _mutated_lines(draw: st.DrawFn, data: bytes) -> bytes:
    """JSON lines with one line mutated, dropped, repeated or cut short."""
    lines = data.splitlines(keepends=True)
    i = draw(st.integers(0, len(lines) - 1))
    how = draw(st.sampled_from(["mutate", "drop", "repeat", "tear"]))
    if how == "mutate":
        lines[i] = draw(_mutated_json(lines[i])).replace(b"\n", b" ") + b"\n"
    elif how == "drop":
        del lines[i]
    elif how == "repeat":
        lines.insert(i, lines[i])
    else:
        lines[i] = lines[i][:draw(st.integers(0, len(lines[i]) - 1))]
        del lines[i + 1:]
    return b"".join(lines)


# ------------------------------------------------------------------ properties


@contextlib.contextmanager
def _files(**named: bytes) -> Iterator[Path]:
    """A fresh folder holding the given files (keyword = file name, dots as underscores)."""
    with tempfile.TemporaryDirectory() as folder:
        for name, data in named.items():
            Path(folder, name.replace("_", ".")).write_bytes(data)
        yield Path(folder)


def mutated_pair(honest: dict[str, bytes], data: st.DataObject) -> tuple[bytes, bytes]:
    """The honest receipt and evidence with one of the two mutated."""
    receipt, evidence = honest["receipt"], honest["evidence"]
    if data.draw(st.booleans(), label="mutate the receipt"):
        return data.draw(_mutated_json(receipt)), evidence
    return receipt, data.draw(_mutated_lines(evidence))


@_FUZZ
@given(data=st.data())
def test_fuzzed_receipts_and_evidence(honest: dict[str, bytes], data: st.DataObject) -> None:
    receipt, evidence = mutated_pair(honest, data)
    with _files(r_json=receipt, r_evidence_jsonl=evidence) as folder:
        path = folder / "r.json"
        for argv in ([str(path)], [str(path), "--json"], [str(folder), "--json"],
                     [str(path), "--key", str(KEYS / "trusted.pub")]):
            _check(verify_main, argv)
        _check(aer1_main, ["show", str(path)])
        _check(aer1_main, ["prove", str(path), "--step", str(data.draw(st.integers(-1, 8)))])


@_FUZZ
@given(data=st.data())
def test_fuzzed_proofs(honest: dict[str, bytes], data: st.DataObject) -> None:
    proof = data.draw(_mutated_json(honest["proof"]))
    with _files(r2_proof_json=proof) as folder:
        path = folder / "r2.proof.json"
        _check(verify_main, [str(path)])
        _check(verify_main, [str(path), "--json"])
        _check(verify_main, [str(path), "--proof", "--expected-root", "0" * 64, "--json"])


@_FUZZ
@given(data=st.data())
def test_fuzzed_journals(honest: dict[str, bytes], data: st.DataObject) -> None:
    journal = data.draw(_mutated_lines(honest["journal"]))
    with _files(run_journal=journal) as folder:
        path = folder / "run.journal"
        for argv in (["recover", str(path), "-o", str(folder / "out.json")],
                     ["recover", str(path), "-o", str(folder / "out2.json"), "--json"]):
            code, _, _ = _check(aer1_main, argv)
            if code in (0, 1):  # a receipt was written: it verifies with its evidence
                written = argv[3]
                assert _check(verify_main, [written])[0] == 0, _run(verify_main, [written])[1]


_TOKENS = st.sampled_from([
    "--json", "--evidence", "--key", "--trusted-keys", "--expected-root", "--expected-head", "--proof", "-",
    "--step", "--rows", "-o", "--force", "--help-me", "0" * 64, "-1", "99999999999999999999", "\udcff.json",
    "nowhere.json", "/dev/null", ".", "", "x" * 300,
])


@_FUZZ
@given(argv=st.lists(_TOKENS | st.text(max_size=10), max_size=6),
       command=st.sampled_from([None, "keygen", "prove", "show", "recover", "verify"]))
def test_fuzzed_arguments(argv: list[str], command: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        cwd = os.getcwd()
        os.chdir(folder)  # keygen and -o write only here
        try:
            if command is None:
                _check(verify_main, argv)
            else:
                _check(aer1_main, [command, *argv])
        finally:
            os.chdir(cwd)


# ------------------------------------------------------------------ named classes from the review


def test_known_crashers_each_give_one_line(honest: dict[str, bytes], tmp_path: Path) -> None:
    receipt = json.loads(honest["receipt"])
    cases: dict[str, bytes] = {
        "integer_over_4300_digits": honest["receipt"].replace(b'{"seq":1,', b'{"seq":' + _BIG_TEXT.encode() + b",",
                                                               1),
        "kind_is_a_list": _dump(_replace(receipt, ("steps", 0, "kind"), ["task"]), True),
        "status_is_an_object": _dump(_replace(receipt, ("steps", 0, "status"), {"ok": 1}), True),
        "workflow_status_is_a_list": _dump(_replace(receipt, ("status",), ["ok"]), True),
        "surrogate_member_name": _dump({**receipt, "\udead": 1}, True),
        "surrogate_member_name_raw": _dump({**receipt, "\udead": 1}, False),
    }
    assert b"0" * 4400 in cases["integer_over_4300_digits"]
    for name, data in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(data)
        code = _check(verify_main, [str(path)])[0]
        assert code in (1, 2), f"{name}: got {code}, want 1 or 2"
        assert _check(verify_main, [str(path), "--json"])[0] == code
        assert _check(aer1_main, ["show", str(path)])[0] == 2
        assert _check(aer1_main, ["prove", str(path), "--step", "1"])[0] == 2


def test_evidence_seq_of_another_json_type_fails_the_evidence_check(honest: dict[str, bytes],
                                                                    tmp_path: Path) -> None:
    for seq in (b"1.0", b"true", b'"1"', b"[1]", _BIG_TEXT.encode()):
        (tmp_path / "r.json").write_bytes(honest["receipt"])
        evidence = honest["evidence"].replace(b'{"seq":1,', b'{"seq":' + seq + b",", 1)
        (tmp_path / "r.evidence.jsonl").write_bytes(evidence)
        code, out, _ = _check(verify_main, [str(tmp_path / "r.json"), "--json"])
        doc = json.loads(out)
        assert (code, doc["verdict"]) == (1, "INVALID"), f"seq {seq[:10]!r}: got {doc['verdict']}, want INVALID"
        assert next(c for c in doc["checks"] if c["name"] == "evidence")["status"] == "FAIL"


def test_surrogate_file_names_print_in_text_and_json(honest: dict[str, bytes], tmp_path: Path) -> None:
    name = os.fsdecode(b"r\xff.json")
    (tmp_path / name).write_bytes(honest["receipt"])
    code, out, _ = _check(verify_main, [str(tmp_path / name)])
    assert code == 0 and "r\\udcff.json: VALID" in out  # the text report escapes what it cannot print
    done = subprocess.run([str(BIN / "aer1-verify"), str(tmp_path / name)], capture_output=True, timeout=60)
    assert done.returncode == 0 and b"r\\udcff.json: VALID" in done.stdout, done.stderr
    code, out, _ = _check(verify_main, [str(tmp_path), "--json"])
    assert json.loads(out)["results"][0]["source"].endswith(name)


def test_recover_close_step_with_agents_null_is_a_left_out_line(tmp_path: Path) -> None:
    journal = tmp_path / "run.journal"
    c = Collector(goal="agents null", journal=journal)
    c.register_agent("alice", type="AssistantAgent")
    c.record("message", "hi", agent="alice")
    c.finalize("done")
    lines = journal.read_bytes().splitlines(keepends=True)
    close = next(i for i, line in enumerate(lines) if b'"close"' in line and b'"agents"' in line)
    doc = json.loads(lines[close])
    text = json.dumps(doc)
    assert '"agents": [' in text
    start = text.index('"agents": [')
    end = text.index("]", start) + 1
    lines[close] = (text[:start] + '"agents": null' + text[end:]).encode() + b"\n"
    journal.write_bytes(b"".join(lines))
    code, out, _ = _check(aer1_main, ["recover", str(journal), "-o", str(tmp_path / "r.json"), "--json"])
    assert code in (1, 2), f"got {code}: {out}"


@pytest.mark.parametrize("argv", [
    ["aer1-verify", "BIG"],
    ["aer1-verify", "BIG", "--json"],
    ["aer1-verify", "SURROGATE"],
    ["aer1-verify", "--bogus", "--json"],
    ["aer1", "show", "BIG"],
    ["aer1", "prove", "SURROGATE", "--step", "nine"],
])
def test_console_scripts_never_print_a_traceback(honest: dict[str, bytes], tmp_path: Path,
                                                 argv: list[str]) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(honest["receipt"].replace(b'{"seq":1,', b'{"seq":' + _BIG_TEXT.encode() + b",", 1))
    surrogate = tmp_path / os.fsdecode(b"\xfe.json")
    shutil.copyfile(big, surrogate)
    args = [str(big) if a == "BIG" else str(surrogate) if a == "SURROGATE" else a for a in argv]
    done = subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, timeout=60)
    assert done.returncode == 2, f"got {done.returncode}, want 2: {done.stderr!r}"
    assert b"Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 1
    if "--json" in args:
        assert isinstance(json.loads(done.stdout), dict)


def test_recover_with_a_surrogate_file_name_prints_text_and_json(honest: dict[str, bytes], tmp_path: Path) -> None:
    journal = tmp_path / os.fsdecode(b"run\xff.journal")
    journal.write_bytes(honest["journal"])
    for extra in ([], ["--json"]):
        out = tmp_path / os.fsdecode(b"out\xfe.json")
        done = subprocess.run([str(BIN / "aer1"), "recover", str(journal), "-o", str(out), *extra],
                              capture_output=True, timeout=60)
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
        if extra:
            assert json.loads(done.stdout)["journal"] == str(journal)
        out.unlink()
