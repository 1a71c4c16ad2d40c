"""Fenced code blocks: extraction from message text and execution in a sandbox.

Only blocks tagged ``python``, ``sh`` or ``bash`` (after normalizing the tag) run;
untagged blocks and blocks in other languages are extracted but never run. See
``spec/sandbox.md`` for the sandbox they run in.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from ._sandbox import DEFAULT_LIMITS, DISK_LIMIT_EXIT_CODE, Sandbox, SandboxLimits, SandboxResult

SUPPORTED_LANGUAGES = ("python", "sh", "bash")
"""Language tags whose blocks run."""
LANGUAGE_ALIASES = {"py": "python", "python3": "python", "shell": "sh"}
"""Tags normalized to a supported language (after lowercasing)."""
MAX_CODE_BYTES = 128 * 1024 - 1
"""Largest block (UTF-8 bytes) that runs: the code travels as one command-line argument."""
REFUSED_EXIT_CODE = 1
"""Exit code of a supported block that was not run (too large, or holding a NUL)."""

_OPENING_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class FencedBlock:
    """One fenced block: its normalized language tag ("" when untagged) and its code."""

    language: str
    code: str

    @property
    def runnable(self) -> bool:
        """Whether the block's language is one that runs."""
        return self.language in SUPPORTED_LANGUAGES


def normalize_language(info: str) -> str:
    """The language of a fence's info string: its first word, lowercased, braces, dot and aliases
    resolved (``"Python3 title=x"`` -> ``"python"``, ``"{.sh}"`` -> ``"sh"``, ``""`` -> ``""``)."""
    words = info.strip().split()
    if not words:
        return ""
    tag = words[0].strip("{}").lstrip(".").lower()
    return LANGUAGE_ALIASES.get(tag, tag)


def _closes(line: str, char: str, length: int) -> bool:
    stripped = line.strip(" \t")
    return len(stripped) >= length and stripped == char * len(stripped)


def _dedent(line: str, indent: int) -> str:
    """Remove up to ``indent`` leading blanks (the opening fence's indentation)."""
    removed = 0
    while removed < indent and removed < len(line) and line[removed] in " \t":
        removed += 1
    return line[removed:]


def extract_code_blocks(text: str) -> list[FencedBlock]:
    """Every closed fenced block of ``text``, in order.

    A fence is a line of three or more backticks or tildes (any indentation) followed by an
    optional info string whose first word is the language; for backtick fences the info
    string holds no backtick. The block ends at a line made only of at least as many of
    the same character. The code is the lines in between, without the opening fence's
    indentation, joined with "\\n" (no trailing newline). A fence never closed opens no
    block and ends the scan, so truncated code never runs.
    """
    lines = text.splitlines()
    blocks: list[FencedBlock] = []
    index = 0
    while index < len(lines):
        match = _OPENING_FENCE.match(lines[index])
        index += 1
        if match is None:
            continue
        fence, info = match["fence"], match["info"]
        if fence[0] == "`" and "`" in info:
            continue
        indent = len(match["indent"])
        body: list[str] = []
        while index < len(lines) and not _closes(lines[index], fence[0], len(fence)):
            body.append(_dedent(lines[index], indent))
            index += 1
        if index >= len(lines):
            break
        index += 1
        blocks.append(FencedBlock(normalize_language(info), "\n".join(body)))
    return blocks


@dataclass(frozen=True)
class CodeRunResult:
    """The outcome of running blocks: ``{exit_code, output}`` plus how and where they ran.

    ``sandbox`` names the sandbox (``"none"`` when the caller opted out of isolation).
    ``timed_out``, ``output_truncated`` and ``limits_hit`` (the union over the blocks run,
    in order; see ``SandboxResult``) say which limits were hit. ``blocks_run`` counts the
    supported blocks reached before stopping (a refused one included), ``blocks_skipped``
    the blocks given whose language does not run, ``limits`` the limits each block had.
    """

    exit_code: int
    output: str
    sandbox: str
    timed_out: bool = False
    output_truncated: bool = False
    limits_hit: tuple[str, ...] = field(default_factory=tuple)
    blocks_run: int = 0
    blocks_skipped: int = 0
    limits: SandboxLimits = DEFAULT_LIMITS


def command_for(block: FencedBlock) -> list[str]:
    """The command running ``block``: the host interpreter for python, else the named shell."""
    if block.language == "python":
        return [sys.executable, "-u", "-c", block.code]
    if block.language in ("sh", "bash"):
        return [block.language, "-c", block.code]
    raise ValueError(f"unsupported language {block.language!r}; supported: {', '.join(SUPPORTED_LANGUAGES)}")


def _notices(result: SandboxResult, limits: SandboxLimits) -> list[str]:
    notices: list[str] = []
    if result.output_truncated:
        notices.append(
            f"[output truncated: {result.output_bytes} bytes written, the first {limits.max_output_bytes} kept]"
        )
    if result.timed_out:
        notices.append(f"[time limit: killed after {limits.timeout_s:g} s]")
    if result.over_quota is not None:
        killed = "; the command was killed" if result.exit_code == DISK_LIMIT_EXIT_CODE else ""
        notices.append(f"[disk limit: {result.over_quota}{killed}]")
    return notices


def join_outputs(parts: Iterable[str]) -> str:
    """Concatenate outputs, starting each non-empty one on a new line."""
    text = ""
    for part in parts:
        if part and text and not text.endswith("\n"):
            text += "\n"
        text += part
    return text


def _refusal(block: FencedBlock) -> str | None:
    """Why ``block`` cannot be passed to a process as an argument, or None."""
    try:
        size = len(os.fsencode(block.code))
    except UnicodeEncodeError:
        return "[not run: the code block is not encodable text]"
    if size > MAX_CODE_BYTES:
        return f"[not run: the code block is {size} bytes; the limit is {MAX_CODE_BYTES}]"
    if "\x00" in block.code:
        return "[not run: the code block contains a NUL character]"
    return None


def execute_code_blocks(
    blocks: Iterable[FencedBlock],
    *,
    sandbox: Sandbox,
    work_dir: str | os.PathLike[str],
    limits: SandboxLimits = DEFAULT_LIMITS,
) -> CodeRunResult:
    """Run the supported blocks one after the other in ``sandbox``, stopping at the first failure.

    Blocks in other languages are skipped (counted, never run). Each run block gets the
    full ``limits`` afresh. A block fails when its exit code is not 0 (a timeout reports
    124); a supported block that cannot be passed to a process (over ``MAX_CODE_BYTES``,
    holding a NUL, or not encodable) is not started and fails with exit code 1 and a bracketed notice.

    ``exit_code`` is that of the failing block, else 0 (also when nothing ran).
    ``output`` is, for each block run in order, its captured stdout and stderr followed by
    one bracketed notice line per limit hit (``[output truncated: ...]``, then ``[time
    limit: ...]``); the pieces are concatenated, a newline being inserted before a
    non-empty piece when the text so far does not end with one. Raises ``SandboxError``
    when the sandbox itself fails.
    """
    given = list(blocks)
    parts: list[str] = []
    exit_code = 0
    timed_out = truncated = False
    hit: list[str] = []
    run = 0
    for block in given:
        if not block.runnable:
            continue
        run += 1
        refusal = _refusal(block)
        if refusal is not None:
            parts.append(refusal + "\n")
            exit_code = REFUSED_EXIT_CODE
            break
        result = sandbox.run(command_for(block), work_dir=work_dir, limits=limits)
        parts.append(join_outputs([result.output, *(n + "\n" for n in _notices(result, limits))]))
        timed_out = timed_out or result.timed_out
        truncated = truncated or result.output_truncated
        hit += [name for name in result.limits_hit if name not in hit]
        exit_code = result.exit_code
        if exit_code != 0:
            break
    return CodeRunResult(
        exit_code=exit_code,
        output=join_outputs(parts),
        sandbox=sandbox.name,
        timed_out=timed_out,
        output_truncated=truncated,
        limits_hit=tuple(hit),
        blocks_run=run,
        blocks_skipped=sum(1 for block in given if not block.runnable),
        limits=limits,
    )
