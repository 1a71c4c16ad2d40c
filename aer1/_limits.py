"""The size, depth and count limits of the AER-1 files, defined once.

The producer (collector, evidence, journal, recovery) and the verifier import them from
here, so that whatever ``Collector.record()`` accepts the verifier accepts too: a limit
the verifier applies to a file is never tighter than what the producer may write into it.
Every limit bounds memory or time; none is a property of the format itself.
(:func:`parse_cost` is here too: the producer and the verifier must estimate alike.)
"""

from __future__ import annotations

__all__ = [
    "CLOSE_RESERVE_BYTES",
    "LINE_COST_SLACK_BYTES",
    "LINE_OVERHEAD_BYTES",
    "MAX_AGENTS_BYTES",
    "MAX_CONTENT_BYTES",
    "MAX_CONTENT_DEPTH",
    "MAX_COST_PER_BYTE",
    "MAX_EVIDENCE_BYTES",
    "MAX_EVIDENCE_DEPTH",
    "MAX_EVIDENCE_LINE_BYTES",
    "MAX_FILES",
    "MAX_INPUT_BYTES",
    "MAX_INT_DIGITS",
    "MAX_JOURNAL_LINE_BYTES",
    "MAX_MEMBER_CHARS",
    "MAX_OPTION_SECONDS",
    "MAX_PARSE_COST_BYTES",
    "MAX_RECEIPT_DEPTH",
    "MAX_STORAGE_OPTIONS_BYTES",
    "MAX_STRING_CHARS",
    "MAX_VALUE_BYTES",
    "STEP_OVERHEAD_BYTES",
    "STORAGE_LOCK_WAIT_SECONDS",
    "parse_cost",
]

_MiB = 1024 * 1024
_GiB = 1024 * _MiB

# ------------------------------------------------------------------ one step's content

#: Deepest nesting of one recorded content: a container may sit at depth 0 to this
#: (the top-level value is depth 0). Below orjson's own limit of 255.
MAX_CONTENT_DEPTH = 200
#: Largest canonical content of one step (bytes); ``record()`` refuses a larger one.
MAX_CONTENT_BYTES = 64 * _MiB

# ------------------------------------------------------------------ receipts and proofs

#: Largest receipt or proof file read (bytes); ``finalize()`` never builds a larger one.
MAX_INPUT_BYTES = 2 * _GiB
#: Deepest nesting accepted in a receipt or proof (ours are 4 deep).
MAX_RECEIPT_DEPTH = 64
#: Longest string accepted in a receipt or proof (characters).
MAX_STRING_CHARS = _MiB
#: Longest string member of a step that ``record()`` accepts (tool, agent, ids; characters).
MAX_MEMBER_CHARS = MAX_STRING_CHARS
#: Bytes a saved receipt spends on one step beyond its header's compact JSON (indentation,
#: ``receipt_id``); the collector counts it to keep the receipt under MAX_INPUT_BYTES.
STEP_OVERHEAD_BYTES = 256
#: Longest JSON text of one step, or of one receipt member other than ``steps``, that the
#: streaming verifier holds (bytes): six step members of MAX_MEMBER_CHARS, each character
#: escaped to 6 bytes, stay under it.
MAX_VALUE_BYTES = 64 * _MiB
#: Largest ``agents`` member the collector builds (its JSON, bytes): well inside
#: MAX_VALUE_BYTES and the close step's content, which binds it.
MAX_AGENTS_BYTES = 16 * _MiB
#: Room the collector keeps in the receipt and the evidence for the workflow members and
#: the close step, so that finalize() always fits under the limits the verifier reads.
CLOSE_RESERVE_BYTES = 64 * _MiB
#: Longest integer literal read, in digits (Python's own default conversion limit).
MAX_INT_DIGITS = 4300

# ------------------------------------------------------------------ evidence and journal

#: Room on one evidence or journal line beyond the content: seq, hashes, a step header
#: whose members are each at most MAX_MEMBER_CHARS long (6 bytes a character when escaped).
LINE_OVERHEAD_BYTES = 64 * _MiB
#: Longest evidence line read (bytes).
MAX_EVIDENCE_LINE_BYTES = MAX_CONTENT_BYTES + LINE_OVERHEAD_BYTES
#: Deepest nesting in an evidence line: its content sits one level down, inside the line's object.
MAX_EVIDENCE_DEPTH = MAX_CONTENT_DEPTH + 2
#: Largest evidence file read (bytes); the collector refuses a step that would go beyond it.
MAX_EVIDENCE_BYTES = 16 * _GiB
#: Longest journal line read (bytes): a step header and its content.
MAX_JOURNAL_LINE_BYTES = MAX_CONTENT_BYTES + LINE_OVERHEAD_BYTES

# ------------------------------------------------------------------ memory of one parse

#: Most memory one in-memory parse may take, as :func:`parse_cost` estimates it (bytes).
#: A receipt that would take more is verified by streaming; an evidence line or proof that
#: would take more is refused, and ``record()`` refuses a content whose line would.
MAX_PARSE_COST_BYTES = 256 * _MiB
#: Receipt files from this size on are verified by streaming (``aer1.verifier._stream``), not held parsed.
STREAM_MIN_BYTES = 32 * _MiB
#: Room in MAX_PARSE_COST_BYTES for an evidence line's own members around its content.
LINE_COST_SLACK_BYTES = 64 * 1024
#: Python memory per container and per item of parsed JSON, rounded up (64-bit CPython:
#: an empty dict with its slot in the parent is about 75 bytes, an integer about 36).
_CONTAINER_COST = 80
_ITEM_COST = 40
#: The most :func:`parse_cost` can give per byte of text: a text shorter than
#: MAX_PARSE_COST_BYTES // MAX_COST_PER_BYTE never needs counting.
MAX_COST_PER_BYTE = 1 + _CONTAINER_COST


def parse_cost(text: bytes | str) -> int:
    """An upper estimate of the memory (bytes) that parsing the JSON ``text`` takes.

    Linear in the text, counted at C speed: the text itself, plus a fixed cost for every
    ``{`` or ``[`` (a container) and every ``,`` (an item). Brackets and commas inside
    strings are counted too, so the estimate only errs high.
    """
    if isinstance(text, str):
        containers, items = text.count("{") + text.count("["), text.count(",")
    else:
        containers, items = text.count(b"{") + text.count(b"["), text.count(b",")
    return len(text) + _CONTAINER_COST * containers + _ITEM_COST * items


# ------------------------------------------------------------------ runs of the verifier

#: Most files verified from folders in one run.
MAX_FILES = 100_000

# ------------------------------------------------------------------ which verification path (aer1.verifier._paths)

#: With ``jobs`` > 1, saved receipt files from this size on are cut into runs of step lines checked in processes;
#: measured on two free cores: 0.8-0.9x one process's time at 0.7 to 2 MiB, 1.1x at 0.5 MiB.
SPLIT_MIN_BYTES = 1 * _MiB
#: With ``jobs`` > 1, a parsed receipt of this many steps or more has its steps checked in processes
#: (fewer are checked in one: a fork and its page copies cost more).
PARALLEL_MIN_STEPS = 20_000
#: With ``jobs`` > 1, a bundle whose receipt files add up to this size or more is verified in processes.
BUNDLE_PARALLEL_MIN_BYTES = 8 * _MiB
#: Files from this size on go to orjson's parser first (below it, the strict parser loads no orjson).
QUICK_PARSE_MIN_BYTES = 1 * _MiB
#: Steps are checked in blocks of ``2**BLOCK_LEVELS``, each a whole Merkle subtree, so blocks' nodes combine.
BLOCK_LEVELS = 10
# ------------------------------------------------------------------ transparency logs (spec/log.md, spec/witness.md)

#: How far a trusted witness's cosignature may be dated after this machine's clock, in seconds
#: (clocks drift; a cosignature dated later than that cannot have been made yet and is refused).
MAX_COSIGNATURE_AHEAD_SECONDS = 600
#: Longest ``--timeout`` or ``--stop-after`` of the log and witness commands, in seconds (a year: a longer
#: wait overflows the platform's timers).
MAX_OPTION_SECONDS = 366 * 24 * 3600
#: Longest receipt a log server takes in one ``POST /add``, in bytes.
MAX_RECEIPT_POST_BYTES = 16 * _MiB

# ------------------------------------------------------------------ object storage (spec/storage.md)

#: Longest ``--storage-options`` JSON text, in bytes (fsspec keyword arguments: endpoint, profile...).
MAX_STORAGE_OPTIONS_BYTES = 64 * 1024
#: Longest a log writer waits for another writer's lock in storage before it gives up, in seconds.
STORAGE_LOCK_WAIT_SECONDS = 120.0

# ------------------------------------------------------------------ erasure (spec/erasure.md)

#: Longest ``reason`` of an erasure record, in characters.
MAX_ERASURE_REASON_CHARS = 1024
