"""The version of aer1, in one place: the package names it, and so does a signed summary of a verification."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
