"""Receipts, evidence, proofs and logs in S3, through fsspec and s3fs (spec/storage.md).

No real S3 server is packaged for these machines: the tests run moto's standalone server
(``ThreadedMotoServer``, an S3 emulator speaking the S3 HTTP API) on 127.0.0.1, port 0. The
code under test reaches it only through the settings a user would give (``--storage-options``
or ``AWS_ENDPOINT_URL``); it has no knowledge that it is an emulator.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1._logdir import LogDir, append_receipts, init_log
from aer1._signing import generate_key_pair, key_id, load_public_key
from aer1.errors import LogInvalid, UsageError
from tests.helpers import KEYS, make_collector

BIN = Path(sys.executable).parent
TRUSTED = str(KEYS / "trusted.pub")
ORIGIN = "example.com/s3-log"
BUCKET = "receipts"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 (a free port), with one bucket; the credentials are dummies."""
    from moto.server import ThreadedMotoServer

    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        mp.delenv("AWS_ENDPOINT_URL", raising=False)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        import boto3

        boto3.client("s3", endpoint_url=url).create_bucket(Bucket=BUCKET)
        try:
            yield url
        finally:
            server.stop()


@pytest.fixture
def opts(endpoint: str) -> Iterator[str]:
    """``--storage-options`` naming the server, also in use for this process's own calls."""
    from aer1 import _storage

    text = json.dumps({"endpoint_url": endpoint})
    _storage.use_options(json.loads(text))
    yield text
    _storage.use_options({})


def _cli(prog: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = subprocess.run([str(BIN / prog), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def _upload(local: Path, url: str) -> None:
    from aer1 import _storage

    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        _storage.write(f"{url}/{path.relative_to(local).as_posix()}", path.read_bytes())


def _archive(root: Path) -> Path:
    """Valid signed receipts with evidence, a tampered one, unreadable bytes, an empty file, JSON that is no receipt."""
    (root / "sub").mkdir(parents=True)
    seeds = []
    for i in range(3):
        c = Collector(goal=f"run {i}", signing_key=str(KEYS / "trusted.key"))
        c.register_agent("alice", type="AssistantAgent")
        for n in range(2 + i):
            c.record("message", {"n": n, "i": i}, agent="alice")
        seeds.append(Path(c.save(root / "sub" / f"seed-{i}.json")))
    (root / "tampered.json").write_text(seeds[0].read_text().replace('"alice"', '"mallory"', 1))
    (root / "unreadable.json").write_bytes(b"\xff{not json")
    (root / "empty.json").write_bytes(b"")
    (root / "not-a-receipt.json").write_text(json.dumps({"hello": 1}))
    return root


def _same_results(on_s3: dict[str, Any], local: dict[str, Any], prefix: str, folder: Path) -> None:
    """The two runs' JSON, field for field, once the S3 run's names are read as the local ones."""
    text = json.dumps(on_s3).replace(prefix, str(folder))
    assert json.loads(text) == local


def test_an_archive_in_s3_verifies_as_the_same_files_on_disk(opts: str, tmp_path: Path) -> None:
    local = _archive(tmp_path / "archive")
    prefix = f"s3://{BUCKET}/{tmp_path.name}/archive"
    _upload(local, prefix)
    code, out, _ = _cli("aer1-verify", "--json", "-j", "1", "--storage-options", opts, "--key", TRUSTED, prefix + "/")
    want_code, want, _ = _cli("aer1-verify", "--json", "-j", "1", "--key", TRUSTED, str(local))
    assert code == want_code == 2
    doc = json.loads(out)
    assert doc["summary"] == {"VALID": 3, "INVALID": 1, "MALFORMED": 3}
    assert all(r["source"].startswith(prefix) for r in doc["results"])
    _same_results(doc, json.loads(want), prefix, local)
    seed = next(r for r in doc["results"] if r["source"].endswith("/sub/seed-0.json"))
    evidence = next(c for c in seed["checks"] if c["name"] == "evidence")
    assert evidence["status"] == "PASS"  # the evidence beside it in the bucket was read


def test_dask_workers_read_s3_with_the_shipped_storage_options(opts: str, tmp_path: Path) -> None:
    local = _archive(tmp_path / "archive")
    prefix = f"s3://{BUCKET}/{tmp_path.name}/archive"
    _upload(local, prefix)
    one = _cli("aer1-verify", "--json", "-j", "1", "--storage-options", opts, "--key", TRUSTED, prefix)
    on = _cli("aer1-verify", "--json", "--dask", "local", "-j", "2", "--storage-options", opts, "--key", TRUSTED,
              prefix)
    assert on[0] == one[0] == 2
    assert json.loads(on[1]) == json.loads(one[1])


def test_collector_saves_to_s3_and_logs_there(opts: str, endpoint: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    key = tmp_path / "log.key"
    key.write_bytes(generate_key_pair()[0])
    log = f"s3://{BUCKET}/{tmp_path.name}/log"
    code, out, err = _cli("aer1", "log", "init", "--storage-options", opts, log, "--origin", ORIGIN, "--key", str(key))
    assert code == 0, err
    vkey = out.strip().splitlines()[-1]
    from aer1 import _storage

    _storage.use_options({})  # a Python user's endpoint comes from the environment
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    archive = f"s3://{BUCKET}/{tmp_path.name}/archive"
    for i in range(3):
        c = make_collector(log=log)
        r = c.finalize(final_answer="ok TERMINATE")
        assert c.save(f"{archive}/r{i}.json", workflow=r) == f"{archive}/r{i}.json"
        assert c.log is not None and c.log.errors == []
    for name in ("r0.json", "r0.evidence.jsonl", "r0.tlog-proof"):
        assert _storage.exists(f"{archive}/{name}")
    code, out, _ = _cli("aer1-verify", "--json", "--log-key", vkey, "--log", log, "--complete", archive)
    doc = json.loads(out)
    assert code == 0, doc
    assert doc["summary"]["VALID"] == 3 and doc["log"]["checkpoint"]["size"] == 6
    assert all(next(c for c in r["checks"] if c["name"] == "log")["status"] == "PASS" for r in doc["results"])
    local = tmp_path / "copy"  # the same objects on disk verify the same way
    local.mkdir()
    for name in _storage.find(archive, lambda n: True, 100):
        (local / name.rsplit("/", 1)[1]).write_bytes(_storage.read_bounded(name, 1 << 24))
    code, out, _ = _cli("aer1-verify", "--json", "-j", "1", str(local))
    assert code == 0 and json.loads(out)["summary"]["VALID"] == 3


_WRITER = """
import json, sys
from aer1 import _storage
from aer1._logdir import append_receipts
_storage.use_options(json.loads(sys.argv[1]))
log, paths = sys.argv[2], sys.argv[3:]
for p in paths:
    with open(p, "rb") as f:
        append_receipts(log, [(p, json.loads(f.read()))])
"""


def test_two_writers_racing_on_one_prefix_lose_no_entry(opts: str, tmp_path: Path) -> None:
    """Three processes append to one log at once, one receipt per append: every entry is in the log."""
    key = tmp_path / "log.key"
    key.write_bytes(generate_key_pair()[0])
    log = f"s3://{BUCKET}/{tmp_path.name}/log"
    init_log(log, ORIGIN, str(key))
    receipts: list[list[str]] = [[], [], []]
    for w in range(3):
        for i in range(5):
            c = make_collector()
            c.record("message", {"writer": w, "i": i}, agent="alice")
            receipts[w].append(c.save(tmp_path / f"w{w}-{i}.json", workflow=c.finalize()))
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, opts, log, *paths], stderr=subprocess.PIPE, text=True)
             for paths in receipts]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    from aer1._tlog import leaf_hash
    from aer1._tlog._entry import entry_for_receipt
    from aer1.verifier._tlog import LogTrust, walk_log

    vkey = LogDir(log).verifier.vkey
    walk = walk_log(log, LogTrust((vkey,)))
    assert walk.checkpoint is not None and walk.checkpoint.size == 15
    assert not walk.problems, walk.problems
    assert walk.entries == 15
    logged = set(walk.leaves)
    for path in (p for ps in receipts for p in ps):
        assert leaf_hash(entry_for_receipt(json.loads(Path(path).read_text())).encode()) in logged
    code, out, _ = _cli("aer1-verify", "--storage-options", opts, "--log", log, "--log-key", vkey)
    assert code == 0, out


def test_a_checkpoint_changed_since_it_was_read_is_never_overwritten(opts: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The If-Match guard alone: a writer whose view of the checkpoint is old is refused, nothing lost."""
    from aer1 import _storage

    key = tmp_path / "log.key"
    key.write_bytes(generate_key_pair()[0])
    log = f"s3://{BUCKET}/{tmp_path.name}/log"
    init_log(log, ORIGIN, str(key))
    stale = _storage.etag(f"{log}/checkpoint")
    first = tmp_path / "first.json"
    c = make_collector()
    c.save(first, workflow=c.finalize())
    append_receipts(log, [(str(first), json.loads(first.read_text()))])
    after = _storage.read_bounded(f"{log}/checkpoint", 1 << 20)
    monkeypatch.setattr(LogDir, "_version", lambda self: stale)  # as if read before the other writer's append
    second = tmp_path / "second.json"
    c = make_collector()
    c.save(second, workflow=c.finalize())
    with pytest.raises(LogInvalid, match="checkpoint changed"):
        append_receipts(log, [(str(second), json.loads(second.read_text()))])
    assert _storage.read_bounded(f"{log}/checkpoint", 1 << 20) == after
    with pytest.raises(_storage.StorageConflict):
        _storage.write(f"{log}/checkpoint", b"x", if_match=stale)
    with pytest.raises(_storage.StorageConflict):
        _storage.write(f"{log}/checkpoint", b"x", create=True)


def test_a_held_lock_is_waited_for_then_named(opts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aer1 import _logdir, _storage

    key = tmp_path / "log.key"
    key.write_bytes(generate_key_pair()[0])
    log = f"s3://{BUCKET}/{tmp_path.name}/log"
    init_log(log, ORIGIN, str(key))
    _storage.write(f"{log}/lock", b"another writer", create=True)
    monkeypatch.setattr(_logdir, "STORAGE_LOCK_WAIT_SECONDS", 0.3)
    with pytest.raises(UsageError, match="held by another writer"):
        LogDir(log).append([b"entry\n"])
    assert LogDir(log).checkpoint()[0].size == 0
    _storage.delete(f"{log}/lock")
    LogDir(log).append([b"entry\n"])
    assert LogDir(log).checkpoint()[0].size == 1 and not _storage.exists(f"{log}/lock")


@pytest.mark.parametrize("args, says", [
    (["--storage-options", "{bad", "s3://receipts/x/"], "--storage-options: not JSON"),
    (["--storage-options", "[1, 2]", "s3://receipts/x/"], "want a JSON object"),
    (["--storage-options", '{"no_such_option": 1}', "s3://receipts/x/"], "s3://"),
    (["s3://no-such-bucket/archive/"], "s3://no-such-bucket/archive/: not found"),
    (["s3://receipts/nothing-here/"], "not found"),
    (["nosuchproto://bucket/archive/"], "nosuchproto://"),
    (["s3://"], "names no bucket"),
])
def test_bad_urls_and_options_are_one_line_and_exit_2(opts: str, args: list[str], says: str) -> None:
    with_endpoint = ["--storage-options", opts] if "--storage-options" not in args else []
    code, out, err = _cli("aer1-verify", *with_endpoint, *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and says in err, err
    code, out, _ = _cli("aer1-verify", "--json", *with_endpoint, *args)
    doc = json.loads(out)
    assert code == 2 and doc["exit_code"] == 2 and says in json.dumps(doc)


def test_verify_receipt_of_a_url_is_the_report_on_the_same_files_on_disk(opts: str, tmp_path: Path) -> None:
    from aer1.verifier import verify_receipt

    local = _archive(tmp_path / "archive")
    prefix = f"s3://{BUCKET}/{tmp_path.name}/archive"
    _upload(local, prefix)
    trusted = {key_id(load_public_key(Path(TRUSTED).read_bytes()))}
    verdicts = {}
    for name in ("sub/seed-0.json", "sub/seed-2.json", "tampered.json", "unreadable.json", "empty.json"):
        on_s3 = verify_receipt(f"{prefix}/{name}", trusted_key_ids=trusted)
        on_disk = verify_receipt(local / name, trusted_key_ids=trusted)
        assert on_s3.source == f"{prefix}/{name}"
        _same_results(on_s3.to_dict(), on_disk.to_dict(), prefix, local)
        verdicts[name] = on_s3.verdict
    assert verdicts == {"sub/seed-0.json": "VALID", "sub/seed-2.json": "VALID", "tampered.json": "INVALID",
                        "unreadable.json": "MALFORMED", "empty.json": "MALFORMED"}
    seed = verify_receipt(f"{prefix}/sub/seed-0.json")
    assert seed.check("evidence").status == "PASS"  # the evidence beside it in the bucket was read
    missing = verify_receipt(f"s3://{BUCKET}/no/such.json")
    assert missing.malformed and "not found" in missing.checks[0].detail
    with pytest.raises(UsageError, match="evidence: give a local file"):
        verify_receipt(f"{prefix}/sub/seed-0.json", evidence=f"{prefix}/sub/seed-0.evidence.jsonl")


def test_a_missing_object_named_alone_is_unreadable(opts: str) -> None:
    code, out, err = _cli("aer1-verify", "--storage-options", opts, f"s3://{BUCKET}/no/such.json")
    assert code == 2 and "MALFORMED" in out and "not found" in err and len(err.strip().splitlines()) == 1


def test_a_log_needs_conditional_writes(tmp_path: Path, opts: str) -> None:
    key = tmp_path / "log.key"
    key.write_bytes(generate_key_pair()[0])
    code, _, err = _cli("aer1", "log", "init", "memory://somewhere/log", "--origin", ORIGIN, "--key", str(key))
    assert code == 2 and "conditional writes" in err and len(err.strip().splitlines()) == 1
    code, _, err = _cli("aer1", "log", "init", "--storage-options", opts, "s3://no-such-bucket/log", "--origin", ORIGIN,
                        "--key", str(key))
    assert code == 2 and "no-such-bucket" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["init", "append", "prove"])
def test_a_log_at_a_url_naming_no_bucket_is_refused_as_such(tmp_path: Path, command: str) -> None:
    """``s3://`` alone names no prefix: said so, not mistaken for a protocol without conditional writes."""
    key = tmp_path / "log.key"
    key.write_bytes(generate_key_pair()[0])
    receipt = tmp_path / "r.json"
    receipt.write_text("{}")
    args = ["--origin", ORIGIN, "--key", str(key)] if command == "init" else [str(receipt)]
    code, _, err = _cli("aer1", "log", command, "s3://", *args)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    if command == "init":
        assert "names no bucket" in err, err


def test_credentials_in_storage_options_are_never_printed(opts: str, endpoint: str) -> None:
    secret = "s3cr3t-never-shown"
    text = json.dumps({"endpoint_url": endpoint, "key": "wrong", "secret": secret})
    for more in ([], ["--json"]):
        code, out, err = _cli("aer1-verify", *more, "--storage-options", text, "s3://no-such-bucket/a/")
        assert code == 2 and secret not in out + err



def test_a_signed_summary_written_to_s3_rechecks_the_objects_it_names(opts: str, tmp_path: Path) -> None:
    """``--attest -o s3://...``: entries name the URLs with the digests of the bytes verified; ``--summary``
    re-reads them, and an object changed afterwards is found."""
    from aer1 import _storage

    local = _archive(tmp_path / "archive")
    prefix = f"s3://{BUCKET}/{tmp_path.name}/archive"
    _upload(local / "sub", prefix)
    summary = f"s3://{BUCKET}/{tmp_path.name}/out/summary.json"
    junit = f"s3://{BUCKET}/{tmp_path.name}/out/junit.xml"
    code, _, err = _cli("aer1-verify", "--storage-options", opts, "-j", "2", "--key", TRUSTED, "--attest",
                        str(KEYS / "trusted.key"), "-o", summary, "--junit", junit, prefix)
    assert code == 0, err
    doc = json.loads(_storage.read_bounded(summary, 1 << 24))
    assert sorted(e["path"] for e in doc["receipts"]) == [f"{prefix}/seed-{i}.json" for i in range(3)]
    assert all(e["evidence"] == e["path"].replace(".json", ".evidence.jsonl") for e in doc["receipts"])
    assert b"seed-0.json" in _storage.read_bounded(junit, 1 << 24)
    code, out, _ = _cli("aer1-verify", "--storage-options", opts, "--summary", summary, "--key", TRUSTED)
    assert code == 0, out
    _storage.write(f"{prefix}/seed-1.evidence.jsonl", b"")
    code, out, _ = _cli("aer1-verify", "--storage-options", opts, "--summary", summary, "--key", TRUSTED)
    assert code == 1 and "seed-1.evidence.jsonl changed" in out, out


def test_a_log_in_s3_is_served_entries_in_proofs_out(opts: str, tmp_path: Path) -> None:
    """``aer1 log serve s3://...``: POSTed entries reach the bucket's log, its files are served from it."""
    from aer1 import _storage
    from aer1._tlog import parse_tlog_proof, verify_tlog_proof
    from aer1._tlog._entry import entry_for_receipt
    from tests.helpers import make_receipt
    from tests.witness.conftest import get, post, server_process

    key = tmp_path / "log.key"
    key.write_bytes(generate_key_pair()[0])
    log = f"s3://{BUCKET}/{tmp_path.name}/served"
    code, _, err = _cli("aer1", "log", "init", "--storage-options", opts, log, "--origin", ORIGIN, "--key", str(key))
    assert code == 0, err
    receipts = [make_receipt() for _ in range(3)]
    with server_process(["log", "serve", "--storage-options", opts, log]) as server:
        for i, receipt in enumerate(receipts):
            status, _, body = post(server.url, "/add", json.dumps(receipt).encode(),
                                   {"Content-Type": "application/json"})
            assert status == 200, body
            proof = verify_tlog_proof(parse_tlog_proof(body), entry_for_receipt(receipt).encode(),
                                      [LogDir(log).verifier])
            assert proof.index == i
        status, _, served = get(server.url, "/checkpoint")
        assert status == 200 and served == _storage.read_bounded(f"{log}/checkpoint", 1 << 16)
        status, _, tile = get(server.url, "/tile/0/000.p/3")
        assert status == 200 and tile == _storage.read_bounded(f"{log}/tile/0/000.p/3", 1 << 16)
    assert LogDir(log).checkpoint()[0].size == 3
