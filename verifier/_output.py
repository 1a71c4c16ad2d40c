"""Command-line plumbing that cannot fail: one-line errors, printable output whatever it holds.

Lone surrogates in member names or file names stay printable; every error of a command
is one line (or one JSON object) and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from ..errors import UsageError
from ._report import CHECKS, CheckResult, Report, one_line

__all__ = ["CliError", "OneLineParser", "dump_json", "exit_now", "one_line", "run_cli", "safe_streams",
           "unreadable_report"]


def dump_json(doc: Any) -> str:
    """``doc`` as indented JSON text and a newline; a lone surrogate is written as its escape.

    orjson refuses lone surrogates (they have no UTF-8 form), and member names or file names
    read from untrusted input may hold them; the standard library writes ``\\udXXX``, which
    every JSON reader accepts.
    """
    return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"


def safe_streams() -> None:
    """Let standard output and error print any text: characters they cannot encode are escaped.

    A stream the process was started without (closed) is replaced by one that discards.
    """
    if sys.stdout is None:  # started with standard output closed: output goes nowhere, the exit code stays
        sys.stdout = open(os.devnull, "w")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def unreadable_report(source: str, why: str) -> Report:
    """The report of a file that could not be verified at all (verdict MALFORMED, exit code 2)."""
    checks = [CheckResult(number, name) for number, name in CHECKS]
    checks[0].fail(why)
    for c in checks[1:]:
        c.skip("the input could not be read")
    return Report(source, checks)


class CliError(UsageError):
    """A usage or input problem of a command: one line, exit code 2."""


#: The namespace attribute where :class:`_StoreOnce` notes the options already given (as
#: argparse notes ``_unrecognized_args``; no command reads its namespace as a whole).
_GIVEN_ATTR = "_aer1_options_given"


class _StoreOnce(argparse._StoreAction):
    """Store an option's value, refusing a second occurrence of the option.

    Plain argparse keeps the last value, so ``--expected-root A --expected-root B`` would
    drop pin A without a word: a second trust anchor, key file or output must never be
    silently ignored.
    """

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given: set[str] = getattr(namespace, _GIVEN_ATTR, set())
        if self.dest in given:
            raise argparse.ArgumentError(self, f"given more than once (last {values!r}): it takes one value")
        given.add(self.dest)
        setattr(namespace, _GIVEN_ATTR, given)
        super().__call__(parser, namespace, values, option_string)


class OneLineParser(argparse.ArgumentParser):
    """argparse with its errors raised as :class:`CliError` (one line, no usage block, no exit).

    An option that takes one value (the default ``store`` action) may be given once.
    """

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """As argparse's; a single-valued option gets :class:`_StoreOnce`."""
        optional = bool(args) and all(isinstance(a, str) and a.startswith(self.prefix_chars) for a in args)
        if optional and kwargs.get("action", "store") == "store" and kwargs.get("nargs") in (None, "?"):
            kwargs["action"] = _StoreOnce
        return super().add_argument(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (usage: {self.prog} --help)")

    def _get_formatter(self) -> argparse.HelpFormatter:
        """argparse's formatter, given the width argparse would find itself (without loading shutil).

        argparse makes a formatter for every option it adds, and one without a width imports
        shutil (and with it zlib, bz2 and lzma) to ask the terminal: a few milliseconds of every run.
        """
        make: Callable[..., argparse.HelpFormatter] = self.formatter_class  # argparse's formatters take a width
        return make(prog=self.prog, width=_terminal_columns() - 2)


def _terminal_columns() -> int:
    """The columns ``shutil.get_terminal_size()`` gives: ``COLUMNS``, else standard output's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def run_cli(prog: str, argv: list[str], run: Callable[[list[str]], int], error_doc: dict[str, Any]) -> int:
    """Run a command so that nothing ends in a traceback: any error is one line and exit code 2.

    With ``--json`` in ``argv`` the error is one JSON object (``error_doc`` and the message)
    on standard output instead, so a caller that parses the output always gets JSON.
    """
    safe_streams()
    try:
        if any("\x00" in a for a in argv):
            raise CliError("an argument holds a NUL character: no file name or value can")
        return run(argv)
    except SystemExit as e:  # --help (0)
        return e.code if isinstance(e.code, int) else 2
    except CliError as e:
        message = str(e)
    except OSError as e:
        message = f"{e.strerror or e}" + (f": {e.filename}" if e.filename else "")
    except KeyboardInterrupt:
        message = "interrupted"
    except MemoryError:
        message = "out of memory"
    except Exception as e:  # a last guard: the invariant is exit 2 and one line, never a traceback
        message = f"internal error: {type(e).__name__}: {e}"
    if "--json" in argv:
        try:
            sys.stdout.write(dump_json({**error_doc, "error": message, "exit_code": 2}))
            sys.stdout.flush()
            return 2
        except OSError as e:  # standard output itself failed (full disk, closed pipe): say so on stderr
            _drop_stdout()
            message = f"{message}; cannot write to standard output: {e.strerror or e}"
    try:
        print(one_line(f"{prog}: error: {message}"), file=sys.stderr)
    except OSError:
        pass  # nowhere left to report to; the exit code still says it
    return 2


def exit_now(code: int) -> NoReturn:
    """End a console script with ``code`` once its output is flushed, skipping the interpreter's teardown.

    Finalizing every loaded module takes about a tenth of a small run (6 ms of 60), and
    nothing of ours needs it: files are closed, worker pools joined and temporary folders
    removed before a command returns. If flushing fails, the ordinary exit runs instead,
    and reports as it always did.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)


def _drop_stdout() -> None:
    """Discard what is still buffered for a standard output that fails, so exit does not retry it."""
    try:
        sys.stdout = open(os.devnull, "w")
    except OSError:
        pass
