"""``aer1 report --frame NAME``: what was verified, mapped onto a set of obligations kept in one data file.

A frame is a TOML file (``aer1/_report/frames/NAME.toml``, or any path): a list of items,
each an obligation with the checks it rests on. An item is decided from the verifier's
report alone, and fails closed:

* ``verified`` only when every check it names ran and PASSed, and its other conditions
  (``closed_by``, ``signer``, ``min_span_days``, ``log_complete``) hold;
* ``not verified`` when any of them did not: a check that FAILed, was NOT CHECKED or did
  not run (no ``--policy``, no trusted key) is named with its status;
* ``not applicable`` for an archive item (``scope = "archive"``) on a single receipt.

``log_complete`` (an archive item's) rests on the log walked over the archive (``--log DIR``,
:mod:`._log`): not verified when no log was walked, the walk found a problem, or the log's
receipts span less than ``min_span_days``.

On an archive a receipt item is verified only when it is verified for every receipt. See
spec/report.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._timeline import parse_time
from ..verifier._parse import MalformedInput, read_limited
from ..verifier._report import PASS, Report

if TYPE_CHECKING:
    from ._log import LogFact

__all__ = ["FRAME_FORMAT", "Frame", "FrameItem", "assess_archive", "assess_receipt", "load_frame"]

FRAME_FORMAT = "aer1-frame-v1"
#: Where the frames shipped with aer1 are (``--frame NAME`` means ``frames/NAME.toml`` here).
FRAMES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "frames")
#: Bytes of a frame file read at most.
MAX_FRAME_BYTES = 1 << 20
VERIFIED, NOT_VERIFIED, NOT_APPLICABLE = "verified", "not verified", "not applicable"
_TOP_KEYS = {"format", "name", "title", "item"}
_ITEM_KEYS = {"id", "ref", "obligation", "shows", "checks", "closed_by", "signer", "scope", "min_span_days",
              "log_complete"}
_SCOPES = ("receipt", "archive")
_SECONDS_PER_DAY = 86400


@dataclass(frozen=True)
class FrameItem:
    """One obligation and what deciding it rests on."""

    id: str
    ref: str
    obligation: str
    shows: str
    checks: tuple[str, ...]
    closed_by: str | None = None
    signer: str | None = None
    scope: str = "receipt"
    min_span_days: float | None = None
    log_complete: bool = False


@dataclass(frozen=True)
class Frame:
    name: str
    title: str
    items: tuple[FrameItem, ...]


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where} is not a non-empty string")
    return value


def _item(raw: Any, n: int) -> FrameItem:
    where = f"item {n}"
    if not isinstance(raw, dict):
        raise ValueError(f"{where} is not a table")
    unknown = set(raw) - _ITEM_KEYS
    if unknown:
        raise ValueError(f"{where} has unknown keys: {', '.join(sorted(unknown))}")
    checks = raw.get("checks")
    if not isinstance(checks, list) or not checks or not all(isinstance(c, str) and c for c in checks):
        raise ValueError(f"{where}: checks is not a non-empty list of check names")
    scope = raw.get("scope", "receipt")
    if scope not in _SCOPES:
        raise ValueError(f"{where}: scope is {scope!r}, want one of {', '.join(_SCOPES)}")
    span = raw.get("min_span_days")
    if span is not None and (isinstance(span, bool) or not isinstance(span, int | float) or span < 0):
        raise ValueError(f"{where}: min_span_days is not a number of days")
    if span is not None and scope != "archive":
        raise ValueError(f"{where}: min_span_days goes with scope = \"archive\"")
    log_complete = raw.get("log_complete", False)
    if not isinstance(log_complete, bool):
        raise ValueError(f"{where}: log_complete is not true or false")
    if log_complete and scope != "archive":
        raise ValueError(f"{where}: log_complete goes with scope = \"archive\"")
    optional = {k: _text(raw[k], f"{where} {k}") for k in ("closed_by", "signer") if k in raw}
    return FrameItem(id=_text(raw.get("id"), f"{where} id"), ref=_text(raw.get("ref"), f"{where} ref"),
                     obligation=_text(raw.get("obligation"), f"{where} obligation"),
                     shows=_text(raw.get("shows"), f"{where} shows"), checks=tuple(checks), scope=scope,
                     min_span_days=None if span is None else float(span), log_complete=log_complete, **optional)


def load_frame(name: str) -> Frame:
    """A frame by name (shipped with aer1) or by path; ValueError says what is wrong with it."""
    shipped = os.path.join(FRAMES_DIR, f"{name}.toml")
    path = shipped if name.replace("-", "").replace("_", "").isalnum() and os.path.isfile(shipped) else name
    if sys.version_info >= (3, 11):  # as the policy reader: the TOML reader loads only when a frame is read
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

    if not os.path.isfile(path):
        known = sorted(n[:-5] for n in os.listdir(FRAMES_DIR) if n.endswith(".toml"))
        raise ValueError(f"no frame {name!r} (shipped: {', '.join(known)}; or give a frame file)")
    try:
        data = read_limited(path, MAX_FRAME_BYTES, what="a frame file")
        raw = tomllib.loads(data.decode("utf-8"))
    except MalformedInput as e:
        raise ValueError(f"frame {path}: {e}") from e
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"frame {path} is not TOML: {e}") from e
    except RecursionError as e:
        raise ValueError(f"frame {path} is nested too deeply to be a frame") from e
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise ValueError(f"frame {path} has unknown keys: {', '.join(sorted(unknown))}")
    if raw.get("format") != FRAME_FORMAT:
        raise ValueError(f"frame {path}: format is {raw.get('format')!r}, want {FRAME_FORMAT!r}")
    items = raw.get("item")
    if not isinstance(items, list) or not items:
        raise ValueError(f"frame {path} has no [[item]]")
    parsed = tuple(_item(i, n) for n, i in enumerate(items, 1))
    if len({i.id for i in parsed}) != len(parsed):
        raise ValueError(f"frame {path}: item ids are not unique")
    return Frame(name=_text(raw.get("name"), "name"), title=_text(raw.get("title"), "title"), items=parsed)


def _rests_on(item: FrameItem, report: Report) -> tuple[list[str], list[str]]:
    """Each named check with its status, and why the item is not verified (empty: nothing against it)."""
    shown, against = [], []
    if report.malformed:
        return [f"{c}: not run" for c in item.checks], ["the receipt could not be read"]
    by_name = {c.name: c for c in report.checks}
    for name in item.checks:
        check = by_name.get(name)
        if check is None:
            shown.append(f"{name}: not run")
            against.append(f"check {name} did not run" + (" (no --policy given)" if name == "policy" else ""))
            continue
        shown.append(f"{check.number} {name}: {check.status}")
        if check.status != PASS:
            against.append(f"check {check.number} {name} is {check.status}" + (f": {check.detail}" if check.detail
                                                                               else ""))
    basis = report.basis()
    if item.closed_by is not None and basis.get("closed_by") != item.closed_by:
        against.append(f"closed by {basis.get('closed_by') or 'nothing'}, want {item.closed_by}")
    if item.signer is not None:
        shown.append(f"signer: {basis.get('signature')}")
        if basis.get("signature") != item.signer:
            against.append(f"signer is {basis.get('signature')}, want {item.signer}")
    return shown, against


def _decided(item: FrameItem, status: str, rests_on: list[str], why: str) -> dict[str, Any]:
    return {"id": item.id, "ref": item.ref, "obligation": item.obligation, "shows": item.shows, "status": status,
            "rests_on": rests_on, "why": why}


def assess_receipt(frame: Frame, report: Report) -> list[dict[str, Any]]:
    """Each item decided for one receipt."""
    out = []
    for item in frame.items:
        if item.scope == "archive":
            out.append(_decided(item, NOT_APPLICABLE, list(item.checks),
                                "one receipt says nothing of how long records are kept: report on the archive"))
            continue
        shown, against = _rests_on(item, report)
        out.append(_decided(item, NOT_VERIFIED if against else VERIFIED, shown, "; ".join(against)))
    return out


def _log_against(item: FrameItem, log: LogFact | None, rests: list[str]) -> list[str]:
    """For a ``log_complete`` item: the log check added to ``rests``, and why it does not hold."""
    if log is None:
        rests.append("log_complete: not run (no --log)")
        return ["no transparency log was checked (give --log DIR with --log-key VKEY)"]
    span = log.span_days
    rests.append(f"log_complete: {log.summary()}")
    rests.append("span of the log's receipts: " + ("none" if span is None else f"{span:.1f} days"))
    return log.against(item.min_span_days or 0.0)


def assess_archive(frame: Frame, receipts: Sequence[tuple[str, Report, str]],
                   log: LogFact | None = None) -> list[dict[str, Any]]:
    """Each item decided over an archive: ``receipts`` are (source, report, time of its first step); ``log``
    the log walked over them (``--log``), when one was."""
    out = []
    for item in frame.items:
        held, first_against = [], None
        for source, report, started in receipts:
            _, against = _rests_on(item, report)
            if against:
                first_against = first_against or f"{source}: {against[0]}"
            else:
                held.append(started)
        rests = [*item.checks, *([f"signer: {item.signer}"] if item.signer else [])]
        if item.scope == "archive":
            times = [t for t in (parse_time(s) for s in held) if t is not None]
            span = (max(times) - min(times)) / _SECONDS_PER_DAY if times else 0.0
            want = item.min_span_days or 0.0
            rests = [*rests, f"span of the receipts that pass: {span:.1f} days"]
            against = [] if span >= want and times else [
                f"the {len(held)} receipts that pass span {span:.1f} days, want at least {want:g}"]
            if item.log_complete:
                against += _log_against(item, log, rests)
            if against:
                out.append(_decided(item, NOT_VERIFIED, rests, "; ".join(against)))
            else:
                logged = f"; the log lists exactly the archive's receipts, spanning {log.span_days:.1f} days" if (
                    item.log_complete and log is not None and log.span_days is not None) else ""
                out.append(_decided(item, VERIFIED, rests, f"{len(held)} receipts pass, spanning {span:.1f} days"
                                    + logged))
            continue
        total = len(receipts)
        if total and len(held) == total:
            out.append(_decided(item, VERIFIED, rests, f"verified for all {total} receipts"))
        else:
            out.append(_decided(item, NOT_VERIFIED, rests, f"verified for {len(held)} of {total} receipts"
                                + (f"; first not: {first_against}" if first_against else "")))
    return out
