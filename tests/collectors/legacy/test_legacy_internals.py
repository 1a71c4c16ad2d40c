"""Canary: every private AutoGen name the legacy hooks depend on exists in the pinned version."""

from __future__ import annotations

import pytest

from aer1.collectors import _legacy_internals as internals


def test_the_installed_package_is_a_pinned_version() -> None:
    found = internals.installed()
    assert found is not None, "got no classic AutoGen package, want one of " + repr(internals.PINNED)
    dist, version = found
    assert internals.PINNED.get(dist) == version, f"got {dist} {version}, want {dist} {internals.PINNED.get(dist)}"


def test_every_name_the_hooks_use_exists() -> None:
    gone = internals.missing()
    assert gone == [], f"got these names missing from {internals.installed()}: {gone}, want none"


def test_a_missing_name_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The canary itself can fail: a renamed attribute or class is listed."""
    names = (
        *internals.NAMES,
        internals.Name("autogen:ConversableAgent", "_renamed_upstream", "canary check"),
        internals.Name("autogen:NoSuchClass", "send", "canary check"),
    )
    monkeypatch.setattr(internals, "NAMES", names)
    assert internals.missing() == ["autogen:ConversableAgent._renamed_upstream", "autogen:NoSuchClass.send"]
