"""The errors aer1 raises: one base, and four kinds a caller handles differently.

* :class:`MalformedInputError`: the input is not what it claims to be (not a receipt,
  a key, a journal, canonical JSON); nothing was checked.
* :class:`VerificationError`: the input is well-formed and a check of it failed (a
  signature that does not verify, a root that does not match): evidence of tampering.
* :class:`CouldNotVerifyError`: verification could not be carried out (a signature
  member of the wrong shape): neither a pass nor proof of tampering.
* :class:`UsageError`: the caller asked for something the API does not allow (a step
  recorded after finalize, a bad argument).

Malformed input and "could not verify" also derive from ``ValueError``, which callers
caught before this taxonomy existed, so existing handlers still work; a failed
verification is deliberately not a ``ValueError``, so it is never mistaken for bad input.

Every public error of aer1 is importable from here, under the one name it has (those
defined in other modules load on first use, so importing this module stays cheap); the
modules that raise them keep exporting them too.
"""

from __future__ import annotations

from ._lazy import lazy_exports

__all__ = [
    "Aer1Error",
    "CouldNotVerifyError",
    "ErasureError",
    "LogInvalid",
    "LogMalformed",
    "MalformedInputError",
    "StorageError",
    "ToolCallRefused",
    "UsageError",
    "VerificationError",
]


class Aer1Error(Exception):
    """Base of every error aer1 raises on purpose."""


class MalformedInputError(Aer1Error, ValueError):
    """The input is malformed: it cannot be read as the thing it claims to be."""


class VerificationError(Aer1Error):
    """A well-formed input failed a check: the data was changed, or signed by someone else."""


class CouldNotVerifyError(Aer1Error, ValueError):
    """Verification could not be carried out, so nothing is claimed either way."""


class UsageError(Aer1Error):
    """The API or a command was used in a way it does not allow."""


class ErasureError(UsageError):
    """An erasure that cannot be made: no such disclosure, or evidence that does not match (spec/erasure.md)."""


class ToolCallRefused(Aer1Error):
    """An approval gate did not let a tool call run (denied, pending, or arguments it cannot bind).

    The model is shown the refusal as the call's error; the message says why.
    """


# ------------------------------------------------------------------ transparency log (aer1._tlog)


class LogMalformed(MalformedInputError):
    """A transparency-log object (note, key, checkpoint, tile, entry bundle, tlog-proof) is malformed."""


class LogInvalid(VerificationError):
    """A well-formed transparency-log object failed a check: a signature, a proof, a root, a size."""


# ------------------------------------------------------------------ object storage (aer1._storage)


class StorageError(UsageError, OSError):
    """Storage named by a URL cannot be used: no such bucket or object, access denied, a protocol
    not installed, bad ``--storage-options``, a conditional write refused (an OSError too)."""


#: Where each error defined elsewhere lives (loaded on first use).
_HOMES = {
    "AgentError": "aer1.groupchat",
    "AnchorError": "aer1.collectors._compat_anchor",
    "ArgumentsError": "aer1.groupchat._arguments",
    "BundleError": "aer1.verifier._bundle",
    "CanonicalizationError": "aer1._canonical",
    "CollectorClosedError": "aer1._collector",
    "DaskUnavailable": "aer1.verifier._dask",
    "GroupChatError": "aer1.groupchat",
    "HttpClientError": "aer1._httpclient",
    "JournalError": "aer1._journal",
    "KeyFileError": "aer1._signing",
    "KeyringError": "aer1._keyring",
    "LinkError": "aer1._link",
    "LogServerError": "aer1._log_client",
    "MalformedInput": "aer1.verifier._parse",
    "MessageValidationError": "aer1.groupchat",
    "NotRegularFile": "aer1._infile",
    "PolicyError": "aer1.verifier._policy",
    "RecoveryError": "aer1._recover",
    "RootMismatchError": "aer1._merkle",
    "SandboxError": "aer1.groupchat",
    "SandboxUnavailableError": "aer1.groupchat",
    "SelectionError": "aer1.groupchat",
    "SignatureInvalid": "aer1._signing",
    "SignatureMalformed": "aer1._signing",
    "StorageConflict": "aer1._storage",
    "TimestampUnavailable": "aer1._timestamp",
    "TokenRefused": "aer1.groupchat",
    "ToolDefinitionError": "aer1.groupchat",
    "UnfitArguments": "aer1._steps_vocab",
    "WitnessStateError": "aer1._witness_state",
    "WorkDirError": "aer1.groupchat",
}
__all__ += sorted(_HOMES)  # named here too
__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__, globals())
