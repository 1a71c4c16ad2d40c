"""Shared by the log tests: a tree of tiles written with the primitives alone, and the Go peer."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from aer1._tlog import (
    Checkpoint,
    Signer,
    encode_bundle,
    entries_path,
    grow_tiles,
    leaf_hash,
    root_of,
    sign_note,
    tile_path,
)

GO_PEER_SOURCE = Path(__file__).parent / "gopeer" / "main.go"
#: Where Debian's golang-golang-x-mod-dev puts the x/mod sources.
GOPATH = "/usr/share/gocode"


def write_tiles(root: Path, entries: list[bytes], batches: list[int]) -> None:
    """Write ``entries`` as tiles and bundles under ``root``, appended in ``batches``."""
    size, edge = 0, {}
    for batch in batches:
        written, edge = grow_tiles(size, edge, [leaf_hash(e) for e in entries[size:size + batch]])
        for level, index, width, data in written:
            p = root / tile_path(level, index, width)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        for t in range(size // 256, (size + batch + 255) // 256):
            part = entries[t * 256:min((t + 1) * 256, size + batch)]
            p = root / entries_path(t, len(part))
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(encode_bundle(part))
        size += batch


def write_checkpoint(root: Path, origin: str, entries: list[bytes], *signers: Signer) -> bytes:
    """Sign and write ``root/checkpoint`` for ``entries``; returns the note."""
    note = sign_note(Checkpoint(origin, len(entries), root_of([leaf_hash(e) for e in entries])).text(), signers)
    (root / "checkpoint").write_bytes(note)
    return note


def build_go_peer(out: Path) -> Path:
    """Build the Go checker (x/mod sumdb note + tlog) into ``out``; raises if Go or x/mod is missing."""
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("the Go peer needs `go` (apt-get install golang-go golang-golang-x-mod-dev)")
    if not (Path(GOPATH) / "src/golang.org/x/mod/sumdb/tlog").is_dir():
        raise RuntimeError(f"the Go peer needs x/mod under {GOPATH} (apt-get install golang-golang-x-mod-dev)")
    work = out / "src"
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(GO_PEER_SOURCE, work / "main.go")
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": GOPATH, "GOCACHE": str(out / "cache"),
           "GOFLAGS": "", "CGO_ENABLED": "0"}
    subprocess.run([go, "build", "-o", str(out / "peer"), "main.go"], cwd=work, env=env, check=True,
                   capture_output=True, timeout=300)
    return out / "peer"


def run_peer(peer: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the Go checker; the result is returned whatever its exit code."""
    return subprocess.run([str(peer), *args], capture_output=True, text=True, timeout=120)
