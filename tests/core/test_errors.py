"""One base error; malformed input, failed verification, "could not verify" and misuse kept apart."""

from __future__ import annotations

import copy
import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import aer1
import aer1.groupchat
import aer1.verifier
from aer1 import (
    Aer1Error,
    Collector,
    CollectorClosedError,
    CouldNotVerifyError,
    KeyFileError,
    MalformedInputError,
    SignatureInvalid,
    UsageError,
    VerificationError,
    load_public_key,
)
from aer1._canonical import CanonicalizationError, exact_bytes
from aer1._merkle import RootMismatchError, leaf_receipt_id, merkle_root, verify_inclusion
from aer1._signing import KeyError_, SignatureMalformed, verify_signature

from ..helpers import KEYS, make_receipt

KINDS = (MalformedInputError, VerificationError, CouldNotVerifyError, UsageError)


def public_exception_classes() -> dict[str, type[BaseException]]:
    """Every public exception class defined in aer1 (modules loaded that need no framework)."""
    found: dict[str, type[BaseException]] = {}
    for package in (aer1, aer1.verifier, aer1.groupchat):
        names = [package.__name__] + [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
        for name in names:
            module = importlib.import_module(name)
            for attr, value in vars(module).items():
                if (inspect.isclass(value) and issubclass(value, BaseException) and not attr.startswith("_")
                        and value.__module__.startswith("aer1") and value.__module__ == module.__name__):
                    found[f"{module.__name__}.{attr}"] = value
    return found


def test_every_public_error_derives_from_the_one_base() -> None:
    found = public_exception_classes()
    assert len(found) >= 15, sorted(found)
    strays = sorted(name for name, cls in found.items() if not issubclass(cls, Aer1Error))
    assert strays == [], f"got {strays} outside Aer1Error, want none"


def test_the_four_kinds_are_disjoint() -> None:
    for a in KINDS:
        for b in KINDS:
            assert a is b or not issubclass(a, b), (a, b)
    assert not issubclass(VerificationError, ValueError)
    assert not issubclass(SignatureInvalid, ValueError)


def test_a_forged_signature_is_a_failed_verification() -> None:
    receipt = make_receipt(signing_key=KEYS / "trusted.key")
    receipt["goal"] = "edited after signing"
    with pytest.raises(VerificationError) as info:
        verify_signature(receipt)
    assert isinstance(info.value, SignatureInvalid)
    assert not isinstance(info.value, (MalformedInputError, CouldNotVerifyError))


def test_a_signature_member_of_the_wrong_shape_could_not_be_verified() -> None:
    receipt = make_receipt(signing_key=KEYS / "trusted.key")
    bad = copy.deepcopy(receipt)
    bad["signature"]["value"] = "not base64!"
    with pytest.raises(CouldNotVerifyError) as info:
        verify_signature(bad)
    assert isinstance(info.value, SignatureMalformed)
    assert not isinstance(info.value, VerificationError)


def test_a_root_that_does_not_match_is_a_failed_verification() -> None:
    leaves = [leaf_receipt_id(f"id-{i}") for i in range(3)]
    with pytest.raises(VerificationError):
        verify_inclusion(leaves[0], 0, 3, [leaves[1], merkle_root(leaves[2:])], b"\0" * 32)
    assert issubclass(RootMismatchError, VerificationError)


def test_malformed_inputs_are_malformed_input(tmp_path: Path) -> None:
    with pytest.raises(MalformedInputError):
        load_public_key(tmp_path / "missing.pub")
    bad_key = tmp_path / "bad.pub"
    bad_key.write_text("not a key")
    with pytest.raises(KeyFileError):
        load_public_key(bad_key)
    assert KeyError_ is KeyFileError
    with pytest.raises(MalformedInputError) as info:
        exact_bytes({"text": "\ud800"})
    assert isinstance(info.value, CanonicalizationError)


def test_recording_after_finalize_is_a_usage_error() -> None:
    c = Collector(goal="g")
    c.finalize()
    with pytest.raises(UsageError) as info:
        c.record("message", {"content": "late"}, agent="a")
    assert isinstance(info.value, CollectorClosedError)
    assert isinstance(info.value, RuntimeError)  # what callers caught before the taxonomy


@pytest.mark.parametrize("kind", [MalformedInputError, CouldNotVerifyError])
def test_input_kinds_are_still_value_errors_for_existing_handlers(kind: Any) -> None:
    assert issubclass(kind, ValueError)



def test_every_public_error_is_importable_from_aer1_errors_under_its_one_name() -> None:
    import aer1.errors

    found = public_exception_classes()
    found.update({f"aer1.collectors._compat_anchor.{c.__name__}": c for c in [
        importlib.import_module("aer1.collectors._compat_anchor").AnchorError]})
    internal = {"aer1.verifier._tsa_verify.Untrusted", "aer1._recover.BadLine",  # caught where raised
                "aer1.verifier._output.CliError", "aer1._httpserve.HttpFailure"}  # a command's, a server's own
    exported = {name: getattr(aer1.errors, name) for name in aer1.errors.__all__}
    missing = sorted(n for n, cls in found.items() if n not in internal and exported.get(cls.__name__) is not cls
                     and cls is not aer1._signing.KeyError_)  # an old alias of KeyFileError
    assert missing == [], f"got {missing} not importable from aer1.errors, want every public error there"
    assert all(inspect.isclass(v) and issubclass(v, Aer1Error) for v in exported.values())
    assert len(set(exported.values())) == len(exported)  # one name per kind
