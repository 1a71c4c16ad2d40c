"""A plain ``aer1-verify receipt.json`` loads only what it needs: start-up is most of a small run's wall time.

(And each ``aer1`` command loads only its own modules: ``prove`` and ``recover`` no HTML
report, none of them the timestamp client.)

Each run is a fresh interpreter (as the console script runs), and what it imported is read
from ``sys.modules`` afterwards. An unsigned receipt needs no cryptography at all; a signed
one needs Ed25519 only, never X.509, the RFC 3161 client or key serialization. No plain run
loads the policy, archive-worker, JUnit, summary or timestamp-token machinery; each of those
still loads, and works, when its option is given.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector, generate_key_pair

#: Modules (and their submodules) no plain verification may load, whatever the receipt.
_NEVER = (
    "cryptography.x509", "cryptography.hazmat.primitives.serialization", "rfc3161_client",
    "multiprocessing", "concurrent.futures", "tomllib", "tomli", "xml", "http", "ssl", "email", "urllib.request",
    "tempfile", "tqdm", "jinja2", "rfc3339_validator", "aer1._outfile",
    "aer1.verifier._policy", "aer1.verifier._junit", "aer1.verifier._attest", "aer1.verifier._tsa_verify",
    "aer1._collector", "aer1._journal", "aer1._evidence", "aer1._redact", "aer1._report", "aer1._timestamp",
    "aer1.collectors",
    # only a file of 32 MiB or more is streamed; only a receipt of 20,000 steps or more is split over processes
    "aer1.verifier._stream", "pickle", "threading",
    # checks 9 and 10 load their modules only for a timestamp token or a keyring
    "aer1.verifier._timestamp", "aer1.verifier._keyring", "aer1._keyring",
    # a small file is read and hashed with the standard library: orjson (and the uuid and decimal
    # modules it loads, which only the producing side's normalization needs otherwise) stays unloaded
    "orjson", "uuid", "decimal",
    # dates are checked by arithmetic; argparse is given the terminal's width (it would load shutil to ask)
    "datetime", "shutil", "bz2", "lzma",
)
#: Loaded by no unsigned verification either.
_NEVER_UNSIGNED = ("cryptography",)

_RUN = """
import json, sys
from aer1.verifier._cli import main
out, argv = sys.argv[1], sys.argv[2:]
if argv[:1] == ["aer1"]:
    from aer1._cli import main
    argv = argv[1:]
code = main(argv)
sys.stdout.flush()
with open(out, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def _loaded(tmp_path: Path, *argv: str) -> tuple[int, list[str]]:
    """Exit code and every module a fresh ``aer1-verify ARGV`` process imported."""
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", _RUN, str(out), *argv], capture_output=True, timeout=120)
    assert out.exists(), f"got no module list, stderr: {done.stderr.decode()[-2000:]}"
    doc = json.loads(out.read_text())
    return int(doc["code"]), list(doc["modules"])


def _offending(modules: list[str], banned: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == b or m.startswith(b + ".") for b in banned)]


def _receipt(tmp_path: Path, signed: bool) -> Path:
    options: dict[str, Any] = {}
    if signed:
        private, _ = generate_key_pair()
        options["signing_key"] = private
    c = Collector("lazy imports", **options)
    for i in range(5):
        c.record("message", {"content": f"turn {i}"}, agent="alice", kind="message")
    path = tmp_path / ("signed.json" if signed else "unsigned.json")
    c.save(str(path), workflow=c.finalize("done"))
    return path


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
@pytest.mark.parametrize("evidence", [True, False], ids=["evidence", "no-evidence"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_plain_verification_loads_no_optional_module(tmp_path: Path, signed: bool, evidence: bool,
                                                     as_json: bool) -> None:
    path = _receipt(tmp_path, signed)
    if not evidence:
        Path(str(path).replace(".json", ".evidence.jsonl")).unlink()
    code, modules = _loaded(tmp_path, *(["--json"] if as_json else []), str(path))
    assert code == 0, f"got exit {code}, want 0 (the receipt verifies)"
    assert "aer1.verifier._steps" in modules, "the run did not verify anything"
    banned = _NEVER if signed else _NEVER + _NEVER_UNSIGNED
    assert _offending(modules, banned) == [], f"got {_offending(modules, banned)} loaded, want none"
    if signed:
        assert "cryptography.hazmat.primitives.asymmetric.ed25519" in modules, "the signature was not checked"


def test_options_still_load_what_they_need(tmp_path: Path) -> None:
    path = _receipt(tmp_path, signed=False)
    policy = tmp_path / "p.toml"
    policy.write_text('format = "aer1-policy-v1"\n[require]\nchain = true\n')
    junit = tmp_path / "out.xml"
    code, modules = _loaded(tmp_path, "--policy", str(policy), "--junit", str(junit), str(path))
    assert code == 0, f"got exit {code}, want 0"
    assert "aer1.verifier._policy" in modules and "aer1.verifier._junit" in modules
    assert junit.read_text().count("<testcase") == 1


def test_keyring_loads_checks_9_and_10(tmp_path: Path) -> None:
    """--keyring loads the keyring module and check 10 runs; with no token the timestamp module stays unloaded."""
    from aer1._cli import main as aer1_main
    from aer1._signing import load_private_key

    assert aer1_main(["keygen", "-o", str(tmp_path / "k")]) == 0
    c = Collector("keyring", signing_key=load_private_key(str(tmp_path / "k.key")))
    c.record("message", {"content": "hi"}, agent="alice", kind="message")
    path = tmp_path / "signed.json"
    c.save(str(path), workflow=c.finalize("done"))
    code, modules = _loaded(tmp_path, "--keyring", str(tmp_path / "k.keyring.json"), str(path))
    assert code == 0, f"got exit {code}, want 0"
    assert "aer1.verifier._keyring" in modules, "got no keyring module loaded, want it for --keyring"
    assert "aer1.verifier._timestamp" not in modules, "got the timestamp module loaded for a receipt with no token"


#: What no aer1 command below loads: the TSA client, X.509, the agent frameworks.
_AER1_NEVER = ("rfc3161_client", "cryptography.x509", "urllib.request", "aer1._timestamp", "aer1.collectors",
               "aer1._collector", "multiprocessing", "tomllib")


def test_aer1_commands_load_only_their_own_modules(tmp_path: Path) -> None:
    path = _receipt(tmp_path, signed=False)
    journal = tmp_path / "run.journal"
    c = Collector("recover me", journal=str(journal))
    c.record("message", {"content": "hi"}, agent="alice", kind="message")
    runs = {
        "prove": ["aer1", "prove", str(path), "--step", "2", "-o", str(tmp_path / "s2.proof.json")],
        "recover": ["aer1", "recover", str(journal), "-o", str(tmp_path / "recovered.json")],
        "show": ["aer1", "show", str(path)],
        "keygen": ["aer1", "keygen", "-o", str(tmp_path / "k")],
    }
    for name, argv in runs.items():
        code, modules = _loaded(tmp_path, *argv)
        assert code == 0, f"aer1 {name}: got exit {code}, want 0"
        banned = _AER1_NEVER if name == "show" else (*_AER1_NEVER, "jinja2", "aer1._report")
        assert _offending(modules, banned) == [], f"aer1 {name}: got {_offending(modules, banned)}, want none"


def test_help_lists_every_option() -> None:
    from aer1.verifier._cli import _parser

    options = [s for a in _parser()._actions for s in a.option_strings]
    assert len(options) > 20
    done = subprocess.run([sys.executable, "-m", "aer1.verifier._cli", "--help"], capture_output=True, timeout=60)
    assert done.returncode == 0, f"got exit {done.returncode}, want 0"
    missing = [o for o in options if o not in done.stdout.decode()]
    assert missing == [], f"got {missing} missing from --help, want every option listed"
