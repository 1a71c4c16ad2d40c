"""Trial: a policy demanding tokens from several distinct TSAs (the spec left it to the policy, which had no member)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..cli_runs import Run
from .conftest import save_run
from .tsa import LocalTSA

TWO_TSAS = 'format = "aer1-policy-v1"\n[require]\ntsa_signers = 2\n'


def _roots(folder: Path, *servers: LocalTSA) -> Path:
    folder.mkdir()
    for i, server in enumerate(servers):
        for cert in ("root.crt", "intermediate.crt"):
            (folder / f"{i}-{cert}").write_bytes((server.pki / cert).read_bytes())
    return folder


def _policy_failures(out: str) -> list[tuple[str, str]]:
    return [(f["rule"], f["message"]) for f in json.loads(out)["failures"] if f["check"] == "policy"]


def test_two_tsas_demanded_one_trusted_fails(tmp_path: Path, tsa: LocalTSA, rogue_tsa: LocalTSA, tsa_roots: Path,
                                             run_cli: Run) -> None:
    path, _ = save_run(tmp_path, timestamp=[tsa.url, rogue_tsa.url])
    policy = tmp_path / "p.toml"
    policy.write_text(TWO_TSAS)
    code, out, _ = run_cli(path, "--policy", policy, "--tsa-roots", tsa_roots, "--json")
    assert code == 1 and [r for r, _ in _policy_failures(out)] == ["require.tsa_signers"], out
    code, out, _ = run_cli(path, "--policy", policy, "--tsa-roots", _roots(tmp_path / "both", tsa, rogue_tsa),
                           "--json")
    assert code == 0, out


@pytest.mark.parametrize("with_roots", [True, False])
def test_one_tsa_twice_is_not_two_tsas(with_roots: bool, tmp_path: Path, tsa: LocalTSA, tsa_roots: Path,
                                      run_cli: Run) -> None:
    path, _ = save_run(tmp_path, timestamp=[tsa.url, tsa.url])
    policy = tmp_path / "p.toml"
    policy.write_text(TWO_TSAS)
    roots = ["--tsa-roots", tsa_roots] if with_roots else []
    code, out, _ = run_cli(path, "--policy", policy, *roots, "--json")
    failures = _policy_failures(out)
    assert code == 1 and [r for r, _ in failures] == ["require.tsa_signers"], out
    assert with_roots or "the timestamp check did not pass" in failures[0][1], failures


@pytest.mark.parametrize("value", ["0", "true", '"2"', "1.5"])
def test_tsa_signers_must_be_a_positive_integer(value: str, tmp_path: Path, run_cli: Run) -> None:
    path, _ = save_run(tmp_path)
    policy = tmp_path / "p.toml"
    policy.write_text(TWO_TSAS.replace("= 2", f"= {value}"))
    code, _, err = run_cli(path, "--policy", policy)
    assert code == 2 and "tsa_signers" in err, err
