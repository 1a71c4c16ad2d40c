# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
AG2_VENV := .venv-ag2
AG2_STAMP := $(AG2_VENV)/.installed
# The maintained classic line: the PyPI package `autogen` (AG2 classic, not ag2 1.x).
AUTOGEN_VENV := .venv-autogen
AUTOGEN_STAMP := $(AUTOGEN_VENV)/.installed
# The real peer verifiers for the interop tests, kept out of every environment (the peer's own
# aer1-verify script would shadow ours): installed beside the tests, imported from there.
PEERS := tests/.peers
PEER_STAMP := $(PEERS)/.installed
PEER_PACKAGES := aer1-verify==0.2.19 aer1-autogen==0.1.15 tlog-scales==0.0.3
# The peer collector's source distribution: its own test suite runs against aer1.collectors
# (tests/compat, spec/compat.md). Pinned like the wheel; kept beside the peers, not in the project.
PEER_SDIST_DIR := $(PEERS)/sdist
PEER_SDIST := $(PEER_SDIST_DIR)/aer1_autogen-0.1.15.tar.gz

.PHONY: demo test test-main test-ag2 test-autogen lint bench clean

$(STAMP): pyproject.toml tests/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[agentchat,grpc,legacy,agent-framework,ag2,otel,dask,s3,dev]" -c tests/constraints.txt
	touch $(STAMP)

$(AG2_STAMP): pyproject.toml
	$(PYTHON) -m venv $(AG2_VENV)
	$(AG2_VENV)/bin/python -m pip install -q --upgrade pip
	$(AG2_VENV)/bin/python -m pip install -q -e ".[dev]" "ag2==0.14.0"
	touch $(AG2_STAMP)

$(AUTOGEN_STAMP): pyproject.toml
	$(PYTHON) -m venv $(AUTOGEN_VENV)
	$(AUTOGEN_VENV)/bin/python -m pip install -q --upgrade pip
	$(AUTOGEN_VENV)/bin/python -m pip install -q -e ".[dev]" "autogen==0.14.1"
	touch $(AUTOGEN_STAMP)

$(PEER_STAMP): $(STAMP)
	$(PY) -m pip install -q --no-deps --upgrade --target $(PEERS) $(PEER_PACKAGES)
	touch $(PEER_STAMP)

$(PEER_SDIST): $(STAMP)
	$(PY) -m pip download -q --no-deps --no-binary :all: aer1-autogen==0.1.15 -d $(PEER_SDIST_DIR)

demo: $(STAMP)
	$(PY) examples/agentchat_team.py out/agentchat_team
	$(VENV)/bin/aer1 report out/agentchat_team/receipt.json --key out/agentchat_team/signing.pub -o out/agentchat_team/report.html

test: lint test-main test-ag2 test-autogen

test-main: $(STAMP) $(PEER_STAMP) $(PEER_SDIST)
	$(PY) -m pytest -q --durations=15

test-ag2: $(AG2_STAMP) $(PEER_STAMP)
	$(AG2_VENV)/bin/python -m pytest -q tests/collectors/legacy

test-autogen: $(AUTOGEN_STAMP) $(PEER_STAMP)
	$(AUTOGEN_VENV)/bin/python -m pytest -q tests/collectors/legacy

lint: $(STAMP)
	$(VENV)/bin/ruff check aer1 collectors verifier tests examples bench
	$(PY) tests/typecheck.py

bench: $(STAMP) $(PEER_STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) $(AG2_VENV) $(AUTOGEN_VENV) tests/.peers out build *.egg-info
