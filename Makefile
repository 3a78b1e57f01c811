# Every set-up step lives here: `make test` and `make demo` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

# A separate venv with the peer anthropic instrumentations installed beside ours (tests/test_peers.py).
PEERS_VENV  := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed-stamp

.PHONY: venv venv-peers test test-peers demo generate prometheus clean

venv: $(STAMP)

venv-peers: $(PEERS_STAMP)

$(PEERS_STAMP): pyproject.toml
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet -e ".[anthropic,peers]"
	touch $(PEERS_STAMP)

test-peers: $(STAMP) $(PEERS_STAMP)
	OTEL_SAMPLING_PEERS_PYTHON=$(PEERS_VENV)/bin/python $(PY) -m pytest tests/test_peers.py

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

test: $(STAMP) $(PEERS_STAMP) prometheus
	OTEL_SAMPLING_PEERS_PYTHON=$(PEERS_VENV)/bin/python $(PY) -m pytest

# promtool and the Prometheus server for the rule tests and the end-to-end test (Debian package).
prometheus:
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus)

# Regenerate dashboards/*.json and alerts/*.yaml from the metric contract (commit the result).
generate: $(STAMP)
	$(PY) -m otel_sampling.mixin --out .

demo: $(STAMP) prometheus
	$(PY) examples/triage/demo.py

clean:
	rm -rf $(VENV) $(PEERS_VENV) .demo .pytest_cache build dist *.egg-info
