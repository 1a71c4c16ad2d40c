"""``aer1 witness serve`` and ``aer1 witness vkey``: a tlog-witness HTTP service over :class:`Witness`.

Endpoints (c2sp.org/tlog-witness@v1.0.0):

* ``POST /add-checkpoint``: the body framed as the protocol says, at most
  :data:`aer1._witness.MAX_ADD_CHECKPOINT_BYTES`; the answer is the witness's.
* ``GET /<hex SHA-256 of an origin>/checkpoint``: the last checkpoint it cosigned for that
  log, with the log's signature and its own cosignature (404 if none).

Everything else is 404 (or 405 for a known path with the wrong method).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from http import HTTPStatus
from typing import TYPE_CHECKING

from ._httpserve import BoundedHandler, BoundedServer, HttpFailure, check_seconds, parse_listen, serve_until_stopped
from .verifier._output import CliError

if TYPE_CHECKING:
    from ._tlog._cosig import CosignatureSigner
    from ._tlog._note import Verifier
    from ._witness import Witness

__all__ = ["MAX_KEY_ARG_BYTES", "add_witness_arguments", "load_cosigner", "load_vkey", "load_witness_keys",
           "witness_handler"]

#: Largest key file read for ``--key`` or a ``--log`` verifier key (bytes).
MAX_KEY_ARG_BYTES = 64 * 1024
_MONITOR_PATH = re.compile(r"/([0-9a-f]{64})/checkpoint")
_TEXT = "text/plain; charset=utf-8"
_DEFAULT_LISTEN = "127.0.0.1:8480"


def _read_small(path: str, what: str) -> str:
    from ._infile import NotRegularFile, open_regular

    try:
        with open_regular(path) as f:
            data = f.read(MAX_KEY_ARG_BYTES + 1)
    except (NotRegularFile, OSError) as e:
        raise CliError(f"{what} {path}: {e.strerror if isinstance(e, OSError) and e.strerror else e}") from e
    if len(data) > MAX_KEY_ARG_BYTES:
        raise CliError(f"{what} {path}: larger than {MAX_KEY_ARG_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CliError(f"{what} {path}: not UTF-8 text") from e


def load_vkey(text: str, what: str) -> Verifier:
    """A signed-note verifier key given inline or as a file holding it (such as a log's ``log.vkey``)."""
    from ._tlog._keys import not_a_key_path, parse_vkey
    from .errors import LogMalformed

    if not os.path.isfile(text) and (why := not_a_key_path(text)) is not None:
        raise CliError(f"{what} {text[:200]!r}: {why}")
    value = _read_small(text, what).strip() if os.path.isfile(text) else text.strip()
    try:
        return parse_vkey(value)
    except LogMalformed as e:
        raise CliError(f"{what} {text[:200]!r}: {e}") from e


def load_witness_keys(texts: list[str]) -> list[Verifier]:
    """``--witness-key`` values: cosignature verifier keys (type 0x04), inline or in files."""
    from ._tlog._cosig import CosignatureVerifier

    keys: list[Verifier] = []
    for text in texts:
        key = load_vkey(text, "--witness-key")
        if not isinstance(key, CosignatureVerifier):
            raise CliError(f"--witness-key {text[:200]!r}: a witness key is a cosignature key (type 0x04)")
        keys.append(key)
    return keys


def load_cosigner(key: str, name: str | None) -> CosignatureSigner:
    """The witness's signer: a PEM Ed25519 key (``aer1 keygen``) named by ``name``, or a signer key string
    ``PRIVATE+KEY+name+id+...`` of type 0x04 (inline or in a file), which carries its name."""
    from ._signing import KeyFileError, load_private_key
    from ._tlog._cosig import CosignatureSigner
    from ._tlog._keys import parse_signer_key
    from .errors import LogMalformed

    text = _read_small(key, "--key") if os.path.isfile(key) else key
    if text.strip().startswith("PRIVATE+KEY+"):
        try:
            signer = parse_signer_key(text)
        except LogMalformed as e:
            raise CliError(f"--key: {e}") from e
        if not isinstance(signer, CosignatureSigner):
            raise CliError("--key: a note signing key (type 0x01), want a witness cosignature key (type 0x04)")
        if name is not None and name != signer.name:
            raise CliError(f"--name {name!r} differs from the key's own name {signer.name!r}")
        return signer
    if name is None:
        raise CliError("--name NAME is required with a PEM key: it names the witness in its cosignatures")
    try:
        private = load_private_key(key)
        return CosignatureSigner(name, private)
    except (KeyFileError, LogMalformed) as e:
        raise CliError(f"--key: {e}") from e


def _trusted_logs(specs: list[str]) -> dict[str, list[Verifier]]:
    """``--log ORIGIN=VKEY`` (or ``--log VKEY``: the origin is the key's name) as origin -> trusted keys."""
    from ._tlog._note import Ed25519Verifier

    logs: dict[str, list[Verifier]] = {}
    for spec in specs:
        origin, sep, vkey = spec.partition("=")
        if not sep:
            origin, vkey = "", spec
        verifier = load_vkey(vkey, "--log")
        if not isinstance(verifier, Ed25519Verifier):
            raise CliError(f"--log {spec[:200]!r}: a log key is an Ed25519 note key (type 0x01)")
        if origin and origin != verifier.name:  # a checkpoint counts only when signed by a key named its origin
            raise CliError(f"--log {spec[:200]!r}: the key is named {verifier.name[:200]!r}, not the origin: a log's "
                           "key is named after its origin")
        logs.setdefault(origin or verifier.name, []).append(verifier)
    if not logs:
        raise CliError("give at least one --log ORIGIN=VKEY")
    return logs


def witness_handler(witness: Witness) -> type[BoundedHandler]:
    """The request handler class serving ``witness``."""
    from ._witness import MAX_ADD_CHECKPOINT_BYTES

    class WitnessHandler(BoundedHandler):
        methods = ("GET", "POST")

        def post(self, path: str) -> None:
            if path != "/add-checkpoint":
                raise HttpFailure(HTTPStatus.NOT_FOUND, "not found: POST /add-checkpoint is the witness's endpoint")
            answer = witness.add_checkpoint(self.read_body(MAX_ADD_CHECKPOINT_BYTES))
            self.reply(answer.status, answer.body, answer.content_type)

        def get(self, path: str) -> None:
            match = _MONITOR_PATH.fullmatch(path)
            if match is None:
                if path == "/add-checkpoint":
                    raise HttpFailure(HTTPStatus.METHOD_NOT_ALLOWED, "add-checkpoint takes a POST", [("Allow", "POST")])
                raise HttpFailure(HTTPStatus.NOT_FOUND, "not found")
            note = witness.checkpoint_for(match.group(1))
            if note is None:
                raise HttpFailure(HTTPStatus.NOT_FOUND, "no checkpoint cosigned for that log")
            self.reply(HTTPStatus.OK, note, _TEXT, [("Cache-Control", "no-cache")])

    return WitnessHandler


def _serve(args: argparse.Namespace) -> int:
    from ._witness import Witness
    from ._witness_state import WitnessState

    signer = load_cosigner(args.key, args.name)
    logs = _trusted_logs(args.log)
    try:
        host, port = parse_listen(args.listen)
        check_seconds("--stop-after", args.stop_after)
    except ValueError as e:
        raise CliError(str(e)) from e
    witness = Witness(signer, logs, WitnessState(args.state))
    for origin in logs:  # an unreadable state is refused now, not at the first request
        witness.last_size(origin)
    server = BoundedServer((host, port), witness_handler(witness))
    print(f"witness {signer.name} vkey {witness.vkey}", flush=True)
    print(f"listening on {server.url}", flush=True)
    serve_until_stopped(server, args.stop_after)
    return 0


def _vkey(args: argparse.Namespace) -> int:
    signer = load_cosigner(args.key, args.name)
    if args.json:
        from ._cli_json import emit

        return emit(args, "witness vkey", {"name": signer.name, "vkey": signer.verifier().vkey}, [])
    sys.stdout.write(signer.verifier().vkey + "\n")
    return 0


def _key_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--key", required=True, metavar="WKEY",
                   help="the witness's Ed25519 key: a PEM file from `aer1 keygen` (with --name), or a signer key "
                        "string PRIVATE+KEY+NAME+ID+... of type 0x04")
    p.add_argument("--name", help="the witness's key name in its cosignatures (a schema-less URL such as "
                                  "witness.example/w1)")


def add_witness_arguments(p: argparse.ArgumentParser) -> None:
    """``aer1 witness serve|vkey`` arguments and handlers."""
    sub = p.add_subparsers(dest="witness_command", required=True)
    s = sub.add_parser("serve", help="serve the tlog-witness protocol (POST /add-checkpoint)")
    _key_options(s)
    s.add_argument("--log", action="append", default=[], metavar="ORIGIN=VKEY",
                   help="a log to witness: its origin and its verifier key (or a file holding it, such as "
                        "DIR/log.vkey); repeat for more logs or keys")
    s.add_argument("--state", required=True, metavar="DIR",
                   help="the folder keeping the last cosigned checkpoint of each log (created if missing)")
    s.add_argument("--listen", default=_DEFAULT_LISTEN, metavar="HOST:PORT",
                   help=f"address to serve on (default {_DEFAULT_LISTEN}; port 0: any free port)")
    s.add_argument("--stop-after", type=float, metavar="SECONDS", help="stop serving after this many seconds")
    s.set_defaults(func=_serve)
    v = sub.add_parser("vkey", help="print the witness's verifier key (type 0x04) for verifiers and logs")
    _key_options(v)
    v.add_argument("--json", action="store_true", help="one JSON object on standard output (errors too)")
    v.set_defaults(func=_vkey)
