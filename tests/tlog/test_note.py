"""Signed notes, key strings and cosignatures: the specification's example, and each rule broken once."""

from __future__ import annotations

import base64
import struct

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1._tlog import (
    MAX_NOTE_SIGNATURES,
    CosignatureSigner,
    CosignatureVerifier,
    Ed25519Signer,
    Ed25519Verifier,
    LogInvalid,
    LogMalformed,
    Signature,
    check_signatures,
    cosignature_message,
    cosignature_timestamp,
    format_signer_key,
    key_id_for,
    open_note,
    parse_note,
    parse_signer_key,
    parse_vkey,
    sign_note,
)

#: The example of c2sp.org/signed-note@v1.0.0.
SPEC_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
SPEC_NOTE = ("This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Z"
             "tg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n")


def _signer(name: str = "log.example/a", seed: int = 1) -> Ed25519Signer:
    return Ed25519Signer(name, Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


def _witness(name: str = "witness.example/w", seed: int = 9) -> CosignatureSigner:
    return CosignatureSigner(name, Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


def test_the_specification_example_verifies() -> None:
    v = parse_vkey(SPEC_VKEY)
    assert (v.name, v.key_id) == ("example.com/foo", 0x530D903A)
    note, good = open_note(SPEC_NOTE, [v])
    assert note.text == "This is an example message.\n"
    assert [s.name for _, s in good] == ["example.com/foo"]
    assert isinstance(v, Ed25519Verifier) and v.vkey == SPEC_VKEY


def test_a_note_signed_here_round_trips_and_the_key_strings_too() -> None:
    s = _signer()
    data = sign_note("hello\n\nworld\n", [s])
    note, _good = open_note(data, [parse_vkey(s.verifier().vkey)])
    assert note.text == "hello\n\nworld\n"  # split at the LAST blank line
    again = parse_signer_key(s.signer_key)
    assert (again.name, again.key_id) == (s.name, s.key_id)
    assert open_note(sign_note("x\n", [again]), [s.verifier()])[1]


def test_a_key_whose_base64_holds_a_plus_parses() -> None:
    for seed in range(1, 40):
        w = CosignatureSigner("w.example", Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))
        if "+" in w.verifier().vkey.split("+", 2)[2]:
            assert parse_vkey(w.verifier().vkey).key_id == w.key_id
            assert parse_signer_key(w.signer_key).key_id == w.key_id
            return
    raise AssertionError("no seed gave a '+' in the key's base64")


def test_key_id_is_the_hash_of_name_newline_type_and_key() -> None:
    s = _signer()
    import hashlib
    want = int.from_bytes(hashlib.sha256(b"log.example/a\n\x01" + s.public).digest()[:4], "big")
    assert key_id_for("log.example/a", 1, s.public) == s.key_id == want
    assert _witness().key_id != key_id_for("witness.example/w", 1, _witness().public)


def test_an_unknown_key_signature_is_ignored() -> None:
    s, other = _signer(), _signer("log.example/a", seed=2)  # same name, another key: another ID
    data = sign_note("text\n", [other, s])
    _, good = open_note(data, [s.verifier()])
    assert [g.key_id for _, g in good] == [s.key_id]
    stranger = Signature(s.name, s.key_id ^ 1, b"\x00" * 64)  # same name, wrong ID: unknown
    _, good = open_note(sign_note("text\n", [s], existing=[stranger]), [s.verifier()])
    assert len(good) == 1


def test_a_known_key_bad_signature_is_rejected() -> None:
    s = _signer()
    good = sign_note("text\n", [s]).decode()
    line = good.split("\n")[-2]
    blob = bytearray(base64.b64decode(line.rsplit(" ", 1)[1]))
    blob[10] ^= 1
    bad = good.replace(line, line.rsplit(" ", 1)[0] + " " + base64.b64encode(bytes(blob)).decode())
    with pytest.raises(LogInvalid, match="does not verify"):
        open_note(bad, [s.verifier()])
    two = sign_note("text\n", [s, _signer("log.example/b", 3)]).decode()
    with pytest.raises(LogInvalid, match="does not verify"):  # one good signature does not excuse a bad one
        open_note(two.replace("text", "texT"), [s.verifier()])


def test_a_note_no_trusted_key_signed_is_rejected() -> None:
    with pytest.raises(LogInvalid, match="no signature by a trusted key"):
        open_note(sign_note("text\n", [_signer(seed=5)]), [_signer().verifier()])


def test_sixteen_signatures_are_accepted_and_the_bound_is_held() -> None:
    signers = [_signer(f"k{i}.example", seed=i + 1) for i in range(16)]
    note, good = open_note(sign_note("t\n", signers), [signers[15].verifier()])
    assert len(note.signatures) == 16 and len(good) == 1
    many = [Signature("k.example", i, b"\x00" * 64) for i in range(MAX_NOTE_SIGNATURES + 1)]
    with pytest.raises(LogMalformed, match="signature lines"):
        parse_note("t\n\n" + "".join(s.line() for s in many))


@pytest.mark.parametrize("text, why", [
    ("no blank line\n— a b\n", "no blank line"),
    ("t\n\n— a QUJDREVGRw==", "newline"),
    ("t\n\n- a QUJDREVGRw==\n", "em dash"),
    ("t\n\n— a+b QUJDREVGRw==\n", "'\\+'"),
    ("t\n\n— a !!!!\n", "base64"),
    ("t\n\n— a QUJD\n", "key ID and a signature"),
    ("t\x01\n\n— a QUJDREVGRw==\n", "control character"),
])
def test_malformed_notes(text: str, why: str) -> None:
    with pytest.raises(LogMalformed, match=why):
        parse_note(text)
    with pytest.raises(LogMalformed):
        parse_note(b"\xff\n\n")


@pytest.mark.parametrize("vkey, why", [
    ("a+530d903a", "3"),
    ("a+530D903A+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k", "hex"),
    ("example.com/foo+530d903b+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k", "got key ID 530d903b, want 530d903a"),
    ("example.com/foo+530d903a+AukyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k", "type"),
    ("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2", "base64"),
    ("exa mple+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k", "spaces"),
])
def test_malformed_verifier_keys(vkey: str, why: str) -> None:
    with pytest.raises(LogMalformed, match=why):
        parse_vkey(vkey)


def test_a_cosignature_signs_the_header_time_and_checkpoint() -> None:
    w = _witness()
    text = b"log.example/a\n3\n" + base64.b64encode(b"\x00" * 32) + b"\n"
    sig = w.sign_at(text, 1679315147)
    assert cosignature_timestamp(sig.sig) == 1679315147
    assert sig.sig[:8] == struct.pack(">Q", 1679315147)
    msg = cosignature_message(text, 1679315147)
    assert msg == b"cosignature/v1\ntime 1679315147\n" + text
    Ed25519PrivateKey.from_private_bytes(bytes([9]) * 32).public_key().verify(sig.sig[8:], msg)
    v = parse_vkey(w.verifier().vkey)
    assert isinstance(v, CosignatureVerifier) and v.verify(text, sig.sig)
    assert not v.verify(text + b"x\n", sig.sig)
    assert not v.verify(text, struct.pack(">Q", 1679315148) + sig.sig[8:])  # the time is signed
    assert not v.verify(text, sig.sig[:-1])


def test_a_cosignature_never_verifies_as_a_log_signature() -> None:
    seed = Ed25519PrivateKey.from_private_bytes(bytes([7]) * 32)
    w, s = CosignatureSigner("same.example", seed), Ed25519Signer("same.example", seed)
    assert w.key_id != s.key_id
    data = sign_note("t\n", [w])
    with pytest.raises(LogInvalid, match="no signature by a trusted key"):
        open_note(data, [s.verifier()])
    assert check_signatures(parse_note(data), [w.verifier()])


def test_signer_key_strings() -> None:
    w = _witness()
    back = parse_signer_key(w.signer_key)
    assert isinstance(back, CosignatureSigner) and back.key_id == w.key_id
    text = format_signer_key("a.example", 1, b"\x01" * 32)
    assert text.startswith("PRIVATE+KEY+a.example+")
    with pytest.raises(LogMalformed, match="PRIVATE"):
        parse_signer_key("a.example+00000000+AQ==")
    with pytest.raises(LogMalformed, match="key ID"):
        parse_signer_key(text.replace(text.split("+")[3], "00000000"))
