"""The examples' command line: ``python examples/NAME.py [OUT_DIR]``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn


def parse_out_dir(description: str, default: Path, argv: list[str] | None = None) -> Path:
    """OUT_DIR from the command line, created; a bad command line exits with code 2."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("out_dir", nargs="?", type=Path, default=default, metavar="OUT_DIR")
    args = parser.parse_args(argv)
    try:
        args.out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        parser.error(f"cannot use {args.out_dir} as the output directory: {e.strerror or e}")
    out_dir: Path = args.out_dir
    return out_dir


def missing_extra(error: ModuleNotFoundError, extra: str) -> NoReturn:
    """Stop with one line naming the extra to install, instead of a traceback."""
    package = (error.name or "its framework").split(".")[0]
    raise SystemExit(f"this example needs {package}, which is not installed: pip install 'aer1[{extra}]'")
