"""The shared mechanics of the framework internals tables: canary, version warning, entries."""

from __future__ import annotations

import logging

import pytest

from aer1.collectors._internals import Private, Table, resolve_owner

ENTRY = Private("collections:OrderedDict", "move_to_end", "canary check")


def test_an_unchecked_version_is_warned_once_with_the_version(caplog: pytest.LogCaptureFixture) -> None:
    table = Table("Example", (ENTRY,), {"example-core": ("1.0.0",)}, installed=lambda: {"example-core": "2.5.0"})
    assert table.unchecked() == {"example-core": "2.5.0"}
    with caplog.at_level(logging.WARNING, logger="aer1"):
        table.warn_if_unchecked()
        table.warn_if_unchecked()
    warnings = [r.getMessage() for r in caplog.records if "example-core" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "example-core 2.5.0" in warnings[0] and "1.0.0" in warnings[0] and "Example" in warnings[0]


def test_a_checked_version_is_not_warned(caplog: pytest.LogCaptureFixture) -> None:
    table = Table("Example", (ENTRY,), {"example-core": ("1.0.0",)}, installed=lambda: {"example-core": "1.0.0"})
    with caplog.at_level(logging.WARNING, logger="aer1"):
        table.warn_if_unchecked()
    assert table.unchecked() == {} and not [r for r in caplog.records if "example-core" in r.getMessage()]


def test_the_default_installed_versions_are_those_of_the_checked_distributions() -> None:
    table = Table("Example", (ENTRY,), {"pytest": (pytest.__version__,), "aer1-no-such-distribution": ("1",)})
    assert table.installed() == {"pytest": pytest.__version__}
    assert table.unchecked() == {}


def test_missing_names_every_entry_absent_on_its_object() -> None:
    """The canary can fail: a renamed attribute, a kind that cannot be resolved, each of several kinds."""
    table = Table("Example", (
        ENTRY,
        Private("collections:OrderedDict", "_renamed_upstream", "canary check"),
        Private("collections:NoSuchClass", "keys", "canary check"),
        Private("collections:OrderedDict", "popitem", "canary check", also=("collections:Counter",)),
        Private("collections:deque", "_skipped", "canary check"),
    ), {})  # fmt: skip
    gone = table.missing(lambda entry, owner: resolve_owner(owner), applies=lambda e: e.attr != "_skipped")
    assert gone == ["collections:OrderedDict._renamed_upstream", "collections:NoSuchClass.keys"]


def test_an_entry_reads_and_writes_its_attribute() -> None:
    class Holder:
        pass

    entry = Private("Holder", "_value", "canary check")
    holder = Holder()
    assert entry.get(holder) is None and entry.get(holder, 3) == 3 and not entry.has(holder)
    entry.set(holder, 7)
    assert entry.get(holder) == 7 and entry.has(holder) and entry.owners == ("Holder",)
