"""Canary: every private AutoGen name the legacy hooks depend on exists in the pinned version."""

from __future__ import annotations

import importlib.metadata

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
        *internals.TABLE.entries,
        internals.Name("autogen:ConversableAgent", "_renamed_upstream", "canary check"),
        internals.Name("autogen:NoSuchClass", "send", "canary check"),
    )
    monkeypatch.setattr(internals.TABLE, "entries", names)
    assert internals.missing() == ["autogen:ConversableAgent._renamed_upstream", "autogen:NoSuchClass.send"]


def test_ag2_1x_beside_the_classic_package_is_not_read_as_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``ag2`` 1.x (which ships only the ``ag2`` package) installed next to the classic
    ``autogen`` 0.14, the distribution that provides ``autogen`` is the one reported."""
    versions = {"ag2": "1.2.1", "autogen": "0.14.1"}

    def version(dist: str) -> str:
        if dist not in versions:
            raise importlib.metadata.PackageNotFoundError(dist)
        return versions[dist]

    monkeypatch.setattr(importlib.metadata, "packages_distributions",
                        lambda: {"ag2": ["ag2"], "autogen": ["autogen"]})
    monkeypatch.setattr(importlib.metadata, "version", version)
    assert internals.installed() == ("autogen", "0.14.1")


def test_no_distribution_providing_autogen_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.metadata, "packages_distributions", lambda: {"ag2": ["ag2"]})
    monkeypatch.setattr(importlib.metadata, "version", lambda dist: "1.2.1")
    assert internals.installed() is None


def test_the_installed_package_provides_autogen() -> None:
    found = internals.installed()
    assert found is not None
    providers = importlib.metadata.packages_distributions().get("autogen") or []
    assert found[0] in {p.lower() for p in providers}, f"got {found[0]}, want one of {providers}"
