# Every set-up step lives here: `make test` and `make demo` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

# A separate venv with the peer anthropic instrumentations installed beside ours (tests/test_peers.py).
PEERS_VENV  := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed-stamp

.PHONY: venv venv-peers venv-bench lint test test-peers soak demo generate prometheus clean test-matrix bench profile

venv: $(STAMP)

venv-peers: $(PEERS_STAMP)

$(PEERS_STAMP): pyproject.toml
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet -e ".[anthropic,peers]"
	touch $(PEERS_STAMP)

# The benchmark's venv: our package with both SDKs and mcp, plus the four peer instrumentations and
# pyinstrument (the bench extra). Kept apart from .venv-peers, which tests/test_peers.py uses.
BENCH_VENV  := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed-stamp
BENCH_ARGS  ?=
PROFILE     ?= otel-sampling:anthropic-create

venv-bench: $(BENCH_STAMP)

$(BENCH_STAMP): pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e ".[bench]"
	touch $(BENCH_STAMP)

# Added time per call: bare SDK, otel-sampling, each peer, the floor; rewrites docs/performance.md
# (BENCH_ARGS="--rounds 3 --no-write" etc.: see tests/bench/run.py --help).
bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python tests/bench/run.py $(BENCH_ARGS)

# A pyinstrument profile of one configuration and call kind (PROFILE=CONFIG:KIND).
profile: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python tests/bench/run.py --profile $(PROFILE) $(BENCH_ARGS)

test-peers: $(STAMP) $(PEERS_STAMP)
	OTEL_SAMPLING_PEERS_PYTHON=$(PEERS_VENV)/bin/python $(PY) -m pytest tests/test_peers.py

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# Static checks (ruff, mypy --strict on otel_sampling/, the import-linter layer contract); configured in
# pyproject.toml, installed by the dev extra.
LINT_PATHS := otel_sampling tests examples

lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

# Lint first: a lint failure stops the run before the slow tests. The tests run on TEST_WORKERS
# pytest-xdist workers (0: in this process), a module per work unit, the long ones first (tests/conftest.py).
TEST_WORKERS ?= 2
XDIST = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: $(STAMP) lint $(PEERS_STAMP) prometheus
	OTEL_SAMPLING_PEERS_PYTHON=$(PEERS_VENV)/bin/python $(PY) -m pytest $(XDIST)

# The long versions of the reliability tests (marked soak; the default suite runs a short version of each).
soak: $(STAMP) prometheus
	$(PY) -m pytest -m soak -o timeout=1800

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
	rm -rf $(VENV) $(PEERS_VENV) $(BENCH_VENV) $(MATRIX) .demo .pytest_cache build dist *.egg-info

# ---------------------------------------------------------------- version matrix (slow: not part of `make test`)
# One venv per cell under .matrix/, the package installed with the oldest (pinned) or the newest
# (whatever the declared ranges resolve to today) supported versions, then the tests that cell can
# run. The mcp 1.x cells leave out the modules written against mcp 2.x (tests/conftest.py); the mcp 2.x cells run everything
# (test_mcp_v1.py skips itself there). The supported ranges in pyproject.toml
# and the README are the ones these cells prove.
MATRIX := .matrix
OLDEST := anthropic==2.14.0 openai==3.57.0 \
	opentelemetry-api==1.45.1 opentelemetry-sdk==1.45.1 opentelemetry-exporter-otlp==1.45.1 \
	opentelemetry-semantic-conventions==0.66b1 opentelemetry-instrumentation==0.66b1 \
	opentelemetry-distro==0.66b1 opentelemetry-exporter-prometheus==0.66b1
MATRIX_CELLS := mcp1-oldest mcp1-newest mcp2-oldest mcp2-newest

extras_mcp1 := mcp1,anthropic,openai,otlp,prometheus,mixin,test
extras_mcp2 := mcp,anthropic,openai,otlp,prometheus,mixin,test
# mcp 1.10 imports a pydantic internal that pydantic 2.12 removed: it runs with the pydantic of its time.
pins_mcp1-oldest := mcp==1.10.0 pydantic==2.11.7 $(OLDEST)
pins_mcp1-newest := "mcp<2"
pins_mcp2-oldest := mcp==2.1.0 $(OLDEST)
pins_mcp2-newest :=
# pyproject's warning filter names an mcp 2.x class, which pytest cannot resolve on mcp 1.x.
tests_mcp1 := -o filterwarnings= tests
tests_mcp2 := tests

test-matrix: $(MATRIX_CELLS:%=matrix-%)

.PRECIOUS: $(MATRIX)/%/.installed

$(MATRIX)/%/.installed: pyproject.toml Makefile
	rm -rf $(MATRIX)/$*
	$(PYTHON) -m venv $(MATRIX)/$*
	$(MATRIX)/$*/bin/python -m pip install --quiet --upgrade pip
	$(MATRIX)/$*/bin/python -m pip install --quiet -e ".[$(extras_$(firstword $(subst -, ,$*)))]" $(pins_$*)
	touch $@

# Not .PHONY: make skips pattern rules for phony targets.
matrix-%: $(MATRIX)/%/.installed
	@echo "== $*: $$($(MATRIX)/$*/bin/python -m pip freeze 2>/dev/null | grep -i -E '^(mcp|anthropic|openai|opentelemetry-(api|sdk|semantic-conventions))==' | tr '\n' ' ')"
	$(MATRIX)/$*/bin/python -m pytest -q -p no:cacheprovider $(XDIST) $(tests_$(firstword $(subst -, ,$*)))
