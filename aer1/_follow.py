"""``aer1 show --follow RUN.journal``: a run's steps printed as they are journaled, the way ``tail -f`` does.

The rule for when following ends (spec/report.md):

* the journal's ``final`` line is read: the run was finalized (exit 0);
* or the journal has not grown for ``IDLE_S`` seconds and no process holds its writer's
  lock (the ``flock`` a :class:`~aer1._journal.Journal` holds while its file is open, which
  the operating system drops however the writer ends, ``SIGKILL`` included): the run was
  interrupted (exit 1; ``aer1 recover`` builds a receipt of what is on disk). Where the
  lock cannot be tested, the idle time alone decides.

A line is printed only once it is whole (ends in ``\\n``); a torn last line left by a killed
writer is reported, not printed. Lines are read under the journal's own limits and checks
(aer1/_recover.py): what is printed is what recovery would take, never run or trusted.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from ._journal import writer_holds_lock
from ._limits import MAX_JOURNAL_LINE_BYTES
from ._recover import BadLine, RecoveryError, check_header, check_step_members, parse_line
from ._timeline import StepRow, format_row, parse_time, step_rows
from .verifier._output import CliError, one_line

__all__ = ["IDLE_S", "POLL_S", "follow", "follow_cli"]

#: How often the journal is read for new lines while it is quiet.
POLL_S = 0.1
#: Quiet time after which a journal whose writer lock is free is taken as interrupted.
IDLE_S = 1.0
#: Bytes read at a time.
_READ_BYTES = 1 << 16


@dataclasses.dataclass
class _State:
    origin: float | None = None
    steps: int = 0
    line: int = 0
    finalized: bool = False


def _row(step: dict[str, Any], content: Any, has_content: bool, state: _State) -> StepRow:
    seq = step["seq"]  # checked: the next seq
    row = step_rows({"steps": [step]}, {seq: content} if has_content else None)[0]
    begun = parse_time(step.get("started_at"))
    if state.origin is None and begun is not None:
        state.origin = begun
    start = None if begun is None or state.origin is None else round(begun - state.origin, 6)
    return dataclasses.replace(row, start=start)


def _take(line: bytes, state: _State, out: IO[str]) -> None:
    """Print one whole journal line (after the header): a step, an agent, or the final line."""
    state.line += 1
    record = parse_line(line, None)
    kind = record.get("type") if isinstance(record, dict) else None
    if kind == "step" and isinstance(record.get("step"), dict):
        step = record["step"]
        if step.get("seq") != state.steps + 1:
            raise BadLine(f"got step seq {step.get('seq')!r}, want {state.steps + 1}")
        check_step_members(step, state.steps + 1)
        state.steps += 1
        out.write(format_row(_row(step, record.get("content"), "content" in record, state)) + "\n")
    elif kind == "agent" and isinstance(record.get("agent"), dict):
        agent = record["agent"]
        out.write(one_line(f"  agent {agent.get('name')} ({agent.get('type')})") + "\n")
    elif kind == "final":
        state.finalized = True
        out.write(one_line(f"finalized: status {record.get('status')}, {record.get('step_count')} steps, "
                           f"merkle_root {record.get('merkle_root')}") + "\n")
    else:
        raise BadLine(f"line {state.line + 1} is not a journal record")
    out.flush()


def _whole_lines(pending: bytearray, chunk: bytes) -> list[bytes]:
    """The lines ``chunk`` completes, without their newlines; the torn rest stays in ``pending``.

    Only the new chunk is searched for line ends and the torn rest is extended in place, so a
    long line read in many chunks costs its length once, not once per chunk."""
    end = chunk.rfind(b"\n")
    if end < 0:
        pending += chunk
        return []
    pending += chunk[:end]
    lines = bytes(pending).split(b"\n")
    pending[:] = chunk[end + 1:]
    return lines


def follow(path: str, out: IO[str], *, idle_s: float = IDLE_S, poll_s: float = POLL_S,
           clock: Callable[[], float] = time.monotonic) -> int:
    """Print the journal's lines as they come; 0 when the run was finalized, 1 when it was interrupted."""
    try:
        f = open(path, "rb")  # closed by the with block below
    except OSError as e:
        raise CliError(f"cannot read journal {path}: {e.strerror or e}") from e
    with f:
        state, pending, header = _State(), bytearray(), None
        quiet_since = clock()
        while True:
            chunk = f.read(_READ_BYTES)
            if chunk:
                quiet_since = clock()
                lines = _whole_lines(pending, chunk)
                for line in lines:
                    if header is None:
                        try:
                            header = check_header(parse_line(line, None), path)
                        except BadLine as e:
                            raise CliError(f"{path} is not an aer1 journal: {e.message}") from e
                        except RecoveryError as e:
                            raise CliError(str(e)) from e
                        out.write(one_line(f"journal {path}: goal {header.get('goal')}  workflow "
                                           f"{header.get('workflow_id')}") + "\n")
                        continue
                    try:
                        _take(line, state, out)
                    except BadLine as e:
                        out.write(one_line(f"line {state.line + 1}: {e.message}: following stops here") + "\n")
                        return 1
                    if state.finalized:
                        return 0
                if len(pending) > MAX_JOURNAL_LINE_BYTES:
                    out.write(f"a line over {MAX_JOURNAL_LINE_BYTES} bytes: following stops here\n")
                    return 1
                continue
            if clock() - quiet_since >= idle_s and writer_holds_lock(path) is not True:
                if header is None:
                    raise CliError(f"{path} is not an aer1 journal: no whole header line, and no writer")
                torn = f" and a torn last line of {len(pending)} bytes" if pending else ""
                out.write(one_line(f"interrupted: the journal stopped growing and its writer is gone, after "
                                   f"{state.steps} steps{torn}; 'aer1 recover {path}' builds a receipt of them")
                          + "\n")
                out.flush()
                return 1
            time.sleep(poll_s)


def follow_cli(path: str) -> int:
    """``aer1 show --follow``: a journal file, never a folder or standard input."""
    if path == "-" or os.path.isdir(path):
        raise CliError(f"{path}: --follow takes a run's journal file")
    return follow(path, sys.stdout)
