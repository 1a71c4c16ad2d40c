"""The verdicts of aer1-autogen 0.1.15's dimensions, as its callers compare them.

Kept apart so that the verification calls (:mod:`._compat_verify`) and the anchor check
(:mod:`._compat_anchor`) both name them without importing each other.
"""

from __future__ import annotations

__all__ = ["VERDICT_FAIL", "VERDICT_NOT_CHECKED", "VERDICT_PASS", "VERDICT_UNAVAILABLE"]

#: A dimension's verdict: it was checked and holds.
VERDICT_PASS = "pass"
#: A dimension's verdict: it was checked and does not hold.
VERDICT_FAIL = "fail"
#: A dimension's verdict: nothing to check it against was given (a key, evidence, a proof).
VERDICT_NOT_CHECKED = "not_checked"
#: A dimension's verdict: it could not be checked here.
VERDICT_UNAVAILABLE = "unavailable"
