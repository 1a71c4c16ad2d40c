"""Drop-in compatibility with aer1-autogen 0.1.15: its API, its verdicts, its anchoring, its own tests."""
