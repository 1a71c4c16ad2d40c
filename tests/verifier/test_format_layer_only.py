"""The verifier depends on the format layer only: importing or running it loads no producer module.

A bug in the collector, the journal, the evidence sink or redaction must not be able to
make the verifier accept what it wrote; so the verifier never loads them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aer1._chain import step_digest_hex
from aer1._receipt import STEP_OPTIONAL_MEMBERS, STEP_REQUIRED_MEMBERS

from ..helpers import KEYS, make_collector

#: The modules of aer1 outside the verifier that the verifier may load: the format layer.
FORMAT_LAYER = {
    "aer1",
    "aer1._lazy",
    "aer1._canonical",
    "aer1._chain",
    "aer1._commit",
    "aer1._erasure",
    "aer1.errors",
    "aer1._imprint",
    "aer1._infile",
    "aer1._keyring",
    "aer1._layout",
    "aer1._limits",
    "aer1._content_hash",
    "aer1._member_rules",
    "aer1._link",
    "aer1._merkle",
    "aer1._outfile",
    "aer1._receipt",
    "aer1._signing",
    "aer1._storage",
    "aer1._timefmt",
    # the transparency-log formats (checkpoints, tiles, proofs, entries): read by ``--log`` and ``--log-key``
    "aer1._tlog",
    "aer1._tlog._checkpoint",
    "aer1._tlog._cosig",
    "aer1._tlog._entry",
    "aer1._tlog._note",
    "aer1._tlog._proof",
    "aer1._tlog._tiles",
    "aer1._tlog._tree",
    "aer1._tlog._keys",
    "aer1._version",
}
#: Producer modules named outright, so a wrong allow-list above cannot hide them.
PRODUCERS = {"aer1._collector", "aer1._journal", "aer1._evidence", "aer1._redact", "aer1._recover", "aer1.groupchat",
             "aer1.collectors", "aer1._logdir", "aer1._log_server", "aer1._log_client", "aer1._log_witness",
             "aer1._witness", "aer1._witness_server", "aer1._witness_state"}


def aer1_modules_after(code: str) -> set[str]:
    """The aer1 modules a fresh interpreter has loaded after running ``code``."""
    program = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('aer1'))))"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return set(loaded)


def outside_the_format_layer(loaded: set[str]) -> set[str]:
    return {m for m in loaded if m not in FORMAT_LAYER and not m.startswith("aer1.verifier")}


@pytest.mark.parametrize("statement", [
    "import aer1.verifier",
    "import aer1.verifier._cli",
    "import aer1.verifier._proof",
    "from aer1 import verify_receipt, verify_proof, Report",
])
def test_importing_the_verifier_loads_no_producer_module(statement: str) -> None:
    loaded = aer1_modules_after(statement)
    assert "aer1.verifier" in loaded
    assert outside_the_format_layer(loaded) == set(), f"got {sorted(loaded)}, want the format layer only"
    assert loaded & PRODUCERS == set()


def test_verifying_a_signed_receipt_with_evidence_loads_no_producer_module(tmp_path: Path) -> None:
    c = make_collector(signing_key=KEYS / "trusted.key")
    path = c.save(tmp_path / "receipt.json", workflow=c.finalize(final_answer="ok"))
    code = (f"from aer1.verifier._cli import main\n"
            f"code = main([{path!r}, '--key', {str(KEYS / 'trusted.pub')!r}, '--json'])\n"
            f"assert code == 0, code")
    loaded = aer1_modules_after(code)
    assert outside_the_format_layer(loaded) == set(), f"got {sorted(loaded)}, want the format layer only"
    assert loaded & PRODUCERS == set()


def test_checking_an_archive_against_a_log_loads_no_producer_module(tmp_path: Path) -> None:
    """``--log DIR --complete ARCHIVE`` and the per-receipt log check read the log with the format layer alone."""
    from ..tlog.helpers import make_log

    log, vkey, archive, _ = make_log(tmp_path, 2)
    code = (f"from aer1.verifier._cli import main\n"
            f"code = main(['--log', {str(log)!r}, '--log-key', {str(vkey)!r}, '--complete', {str(archive)!r}, "
            f"'-j', '1', '--json'])\n"
            f"assert code == 0, code")
    loaded = aer1_modules_after(code)
    assert "aer1._tlog._proof" in loaded and "aer1._tlog._entry" in loaded  # the log was read
    assert outside_the_format_layer(loaded) == set(), f"got {sorted(loaded)}, want the format layer only"
    assert loaded & PRODUCERS == set()


def test_the_producer_still_loads_what_it_needs() -> None:
    """The allow-list is not vacuous: recording does load producer modules."""
    loaded = aer1_modules_after("from aer1 import Collector\nCollector(goal='g').finalize()")
    assert {"aer1._collector", "aer1._evidence", "aer1._redact"} <= loaded


#: A step as the verifier's members check lets it through to the flat hashing path: ASCII
#: member names, any text as values (control characters, non-BMP, escapes), a safe seq.
flat_steps = st.fixed_dictionaries(
    {name: st.text(min_size=1) for name in STEP_REQUIRED_MEMBERS if name != "seq"}
    | {"seq": st.integers(1, 2**53 - 1)},
    optional={name: st.text(min_size=1) for name in STEP_OPTIONAL_MEMBERS},
)


@settings(max_examples=300)
@given(flat_steps)
def test_the_verifiers_flat_step_hash_agrees_with_the_exact_encoder(step: dict[str, object]) -> None:
    """Differential: the orjson shortcut the verifier takes for checked steps gives the exact JCS digest."""
    try:
        exact = step_digest_hex(step)
    except ValueError:  # a lone surrogate has no exact form: the flat path must refuse it too
        with pytest.raises(ValueError):
            step_digest_hex(step, flat=True)
        return
    assert step_digest_hex(step, flat=True) == exact
