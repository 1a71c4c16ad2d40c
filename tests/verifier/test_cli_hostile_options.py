"""Trial: hostile inputs to the verifier's options end in a usage error naming the file, never an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..cli_runs import Run

DEPTH = 100_000


@pytest.mark.parametrize("value", ["[" * DEPTH + "]" * DEPTH, "{a=" * DEPTH + "1" + "}" * DEPTH],
                         ids=["arrays", "inline-tables"])
def test_policy_nested_too_deeply_is_a_usage_error(value: str, tmp_path: Path, receipt: Path, run_cli: Run) -> None:
    policy = tmp_path / "deep.toml"
    policy.write_text(f'format = "aer1-policy-v1"\nx = {value}\n')
    code, out, err = run_cli(receipt, "--policy", policy)
    assert (code, err.count("\n")) == (2, 1), err
    assert "nested too deeply" in err and "internal error" not in err, err
    code, out, _ = run_cli(receipt, "--policy", policy, "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"]) == (2, "MALFORMED") and "nested too deeply" in doc["error"], out


@pytest.mark.parametrize("jobs", ["0", "-3", "257", "100000"])
def test_jobs_out_of_range_is_a_usage_error_before_any_process_starts(jobs: str, receipt: Path,
                                                                      run_cli: Run) -> None:
    code, out, err = run_cli("--jobs", jobs, receipt, receipt)
    assert (code, out, err.count("\n")) == (2, "", 1) and "want 1 to 256" in err, err
