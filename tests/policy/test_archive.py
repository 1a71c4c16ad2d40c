"""Archive runs: one line per receipt, a summary, the same results on any number of jobs, JUnit, signed summaries."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1._canonical import exact_bytes
from aer1._signing import PAYLOAD_TYPE, generate_key_pair, load_private_key, pae
from aer1.verifier._attest import SUMMARY_PAYLOAD_TYPE

from .conftest import payment_run

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def archive(tmp_path: Path, keys: tuple[bytes, Path, str]) -> Path:
    """Four signed receipts, one unsigned, one tampered, one unreadable, in nested folders."""
    root = tmp_path / "archive"
    (root / "2026" / "11").mkdir(parents=True)
    for i in range(4):
        payment_run(root / "2026" / "11" / f"ok{i}.json", keys[0])
    payment_run(root / "unsigned.json", None)
    bad = payment_run(root / "2026" / "tampered.json", keys[0])
    wf = json.loads(bad.read_text())
    wf["goal"] = "edited"
    bad.write_text(json.dumps(wf))
    (root / "2026" / "junk.json").write_text("{not json")
    return root


@pytest.mark.unverified_receipts
def test_one_line_per_receipt_and_a_summary(archive: Path, run_cli: Run, keys: tuple[bytes, Path, str]) -> None:
    code, out, err = run_cli(archive, "--jobs", "1")
    lines = out.splitlines()
    assert code == 2 and err == ""
    assert sum(": VALID (" in x for x in lines) == 5
    assert sum(": INVALID: " in x for x in lines) == 1 and sum(": MALFORMED: " in x for x in lines) == 1
    assert lines[-1] == "5 valid, 1 invalid, 1 unreadable (of 7)"
    assert f"by signer key: {keys[2]} 4, not checked 1, unsigned 1" in lines, lines[-5:]
    assert "by status: not checked 1, ok 5" in lines
    assert "unreadable: 1" in lines


@pytest.mark.unverified_receipts
def test_only_failures_and_verbose(archive: Path, run_cli: Run) -> None:
    _, out, _ = run_cli(archive, "--only-failures", "-j", "1")
    assert [x.split(": ")[1] for x in out.splitlines() if x.startswith(str(archive))] == ["MALFORMED", "INVALID"]
    _, out, _ = run_cli(archive, "--verbose", "-j", "1")
    assert out.count("  5 chain        PASS") == 5


@pytest.mark.unverified_receipts
def test_jobs_give_the_same_results_in_the_same_order(archive: Path, run_cli: Run) -> None:
    one = run_cli(archive, "--json", "-j", "1")
    two = run_cli(archive, "--json", "-j", "2")
    assert one == two
    doc = json.loads(one[1])
    assert doc["summary"] == {"VALID": 5, "INVALID": 1, "MALFORMED": 1}
    assert doc["breakdown"]["unreadable"]["count"] == 1


@pytest.mark.unverified_receipts
def test_summary_counts_policy_rules_violated(archive: Path, run_cli: Run, tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text('format = "aer1-policy-v1"\n[require]\nevidence = true\n[allow]\nagents = ["user", "manager"]\n')
    code, out, _ = run_cli(archive, "--policy", policy, "-j", "2")
    assert code == 2 and "by rule violated: allow.agents 6, require.evidence 1" in out.splitlines(), out[-400:]


@pytest.mark.unverified_receipts
def test_junit_file(archive: Path, run_cli: Run, tmp_path: Path) -> None:
    junit = tmp_path / "out.xml"
    run_cli(archive, "--junit", junit, "-j", "2")
    suite = ET.parse(junit).getroot()
    assert (suite.tag, suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("testsuite", "7", "1", "1")
    failed = [c for c in suite if c.find("failure") is not None]
    assert failed[0].get("name", "").endswith("tampered.json")
    assert failed[0].find("failure").get("type") == "members" or failed[0].find("failure").get("type")


def test_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    for i in range(3):
        payment_run(tmp_path / f"r{i}.json", None)
    cmd = [sys.executable, "-m", "aer1.verifier._cli", str(tmp_path), "-j", "1"]
    piped = subprocess.run(cmd, capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stderr == ""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal 100 columns wide
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    stdout = proc.communicate()[0]
    os.close(master)
    shown = b"".join(chunks).decode()
    assert proc.returncode == 0 and "/3 [" in shown and "receipt/s" in shown, shown
    assert "receipt/s" not in stdout


def _attest(run_cli: Run, tmp_path: Path, what: Path, key: bytes) -> Path:
    keyfile = tmp_path / "auditor.key"
    keyfile.write_bytes(key)
    out = tmp_path / "summary.json"
    run_cli(what, "--attest", keyfile, "-o", out, "-j", "1")
    return out


@pytest.mark.unverified_receipts
def test_signed_summary_rechecks_and_names_changed_receipts(archive: Path, run_cli: Run, tmp_path: Path) -> None:
    private, public = generate_key_pair()
    summary = _attest(run_cli, tmp_path, archive, private)
    doc = json.loads(summary.read_text())
    assert doc["verdict"] == "MALFORMED" and len(doc["receipts"]) == 7
    pub = tmp_path / "auditor.pub"
    pub.write_bytes(public)
    code, out, _ = run_cli("--summary", summary, "--key", pub)
    # the summary holds, but it records a MALFORMED archive: a gate on the exit code must not pass it
    assert code == 1 and "valid signature by trusted key" in out, out
    assert "the run it summarizes was MALFORMED" in out.splitlines()[-1], out
    edited = archive / "2026" / "11" / "ok1.json"
    edited.write_text(edited.read_text() + " ")
    code, out, _ = run_cli("--summary", summary, "--json")
    assert code == 1
    doc2 = json.loads(out)
    assert "ok1.json" in doc2["checks"][3]["failures"][0]["message"]


def test_summary_edits_and_receipt_signatures_do_not_pass(tmp_path: Path, run_cli: Run) -> None:
    payment_run(tmp_path / "r.json", None)
    private, _ = generate_key_pair()
    summary = _attest(run_cli, tmp_path, tmp_path / "r.json", private)
    doc = json.loads(summary.read_text())
    doc["verdict"] = "VALID" if doc["verdict"] != "VALID" else "INVALID"
    summary.write_text(json.dumps(doc))
    code, out, _ = run_cli("--summary", summary)
    assert code == 1 and "does not verify" in out
    doc = json.loads(summary.read_text())  # signed under the receipt type tag: not a summary signature
    body = {k: v for k, v in doc.items() if k != "signature"}
    import base64

    sig = load_private_key(private).sign(pae(PAYLOAD_TYPE, exact_bytes(body)))
    doc["signature"]["value"] = base64.b64encode(sig).decode()
    summary.write_text(json.dumps(doc))
    assert run_cli("--summary", summary)[0] == 1
    doc["signature"]["value"] = base64.b64encode(
        load_private_key(private).sign(pae(SUMMARY_PAYLOAD_TYPE, exact_bytes(body)))).decode()
    summary.write_text(json.dumps(doc))
    # a valid signature: exit 0 only when the verdict it records is VALID too
    assert run_cli("--summary", summary)[0] == (0 if doc["verdict"] == "VALID" else 1)
    other = tmp_path / "other.pub"
    other.write_bytes(generate_key_pair()[1])
    assert run_cli("--summary", summary, "--key", other)[0] == 1


@pytest.mark.parametrize("args", [["--attest", "k.key"], ["-o", "s.json"], ["--summary", "s.json", "x.json"],
                                  ["--jobs", "0"], ["--junit", "."]])
def test_auditor_option_misuse_is_one_line(tmp_path: Path, run_cli: Run, args: list[Any]) -> None:
    r = payment_run(tmp_path / "r.json", None)
    code, out, err = run_cli(r, *args) if "--summary" not in args else run_cli(*args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "Traceback" not in err


def test_standard_input_takes_the_policy_and_refuses_named_outputs(tmp_path: Path) -> None:
    r = payment_run(tmp_path / "r.json", None)
    cmd = [sys.executable, "-m", "aer1.verifier._cli", "-", "--require", "evidence", "--json"]
    done = subprocess.run(cmd, input=r.read_bytes(), capture_output=True)
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["failures"][-1]["rule"] == "require.evidence"
    done = subprocess.run([*cmd, "--junit", str(tmp_path / "j.xml")], input=r.read_bytes(), capture_output=True)
    assert done.returncode == 2 and "standard input" in json.loads(done.stdout)["error"]
