# Every set-up step lives here: `make test` and `make demo` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

# A separate venv with the peer anthropic instrumentations installed beside ours (tests/test_peers.py).
PEERS_VENV  := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed-stamp

.PHONY: jsonnet venv venv-peers venv-bench venv-hosts lint test test-busy test-peers test-py310 test-hosts soak demo generate prometheus victoria-metrics clean test-matrix bench profile bench-instructions bench-check valgrind

venv: $(STAMP)

venv-peers: $(PEERS_STAMP)

$(PEERS_STAMP): pyproject.toml
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet -e ".[anthropic,peers]"
	touch $(PEERS_STAMP)

# The benchmark's venv: our package with the provider SDKs and mcp, plus the peer instrumentations and
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

# Instructions per call under valgrind's callgrind (load does not change them): every configuration and
# call kind, twice, the contract-cost and the scaling tables; rewrites their tables in docs/performance.md
# and the ratios bench-check compares with (tests/bench/instructions.json). Takes a while: see
# tests/bench/instructions.py --help for fewer (INSTRUCTIONS_ARGS="--runs 1 --no-write" etc.).
INSTRUCTIONS_ARGS ?= --contract --scaling

bench-instructions: $(BENCH_STAMP) valgrind
	$(BENCH_VENV)/bin/python tests/bench/instructions.py $(INSTRUCTIONS_ARGS)

# The regression guard (CI): ours' instruction ratios to the floors (no peers, one run) against the committed
# ones; fails on a rise above the tolerance in tests/bench/instructions.json. To see it fail:
# make bench-check CHECK_ARGS="--drag 1000" (ours slowed by an extra wrapper in the bench worker).
CHECK_ARGS ?=

bench-check: $(BENCH_STAMP) valgrind
	$(BENCH_VENV)/bin/python tests/bench/instructions.py --check $(CHECK_ARGS)

# The jsonnet command of Debian/Ubuntu (the C++ jsonnet, 0.18 in bookworm): tests/test_bundled.py builds
# mixin.libsonnet with it, the jsonnet that `apt install jsonnet` gives users.
jsonnet:
	@command -v jsonnet >/dev/null || \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends jsonnet)

# valgrind (its callgrind headers come with the Debian package) and a C compiler for the bench's marks.
valgrind:
	@command -v valgrind >/dev/null && [ -f /usr/include/valgrind/callgrind.h ] && command -v cc >/dev/null || \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends valgrind gcc libc6-dev)

test-peers: $(STAMP) $(PEERS_STAMP)
	OTEL_SAMPLING_PEERS_PYTHON=$(PEERS_VENV)/bin/python $(PY) -m pytest tests/test_peers.py

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# Static checks (ruff check and ruff format --check, mypy --strict on otel_sampling/, the import-linter layer contract); configured in
# pyproject.toml, installed by the dev extra.
LINT_PATHS := otel_sampling tests examples

lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

# Lint first: a lint failure stops the run before the slow tests. The tests run on TEST_WORKERS
# pytest-xdist workers (0: in this process), a module per work unit, the long ones first (tests/conftest.py).
TEST_WORKERS ?= 2
XDIST = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: $(STAMP) lint $(PEERS_STAMP) prometheus victoria-metrics jsonnet
	OTEL_SAMPLING_PEERS_PYTHON=$(PEERS_VENV)/bin/python $(PY) -m pytest $(XDIST)

# `make test` while a CPU hog keeps every core busy (one busy loop per core; HOG_WORKERS=N for more),
# stopped when the suite ends, pass or fail (tests/busy.sh). No test may fail because the machine is slow.
test-busy:
	bash tests/busy.sh $(MAKE) test

# A core-only install (`pip install .`, no extras) on Python 3.10, the oldest supported, in a fresh
# .venv-py310: it compiles, imports, and every entry point loads, instruments and uninstruments
# (tests/core_install_check.py). PYTHON310 is found on PATH, through pyenv or in the usual places
# (or given: make test-py310 PYTHON310=/path/to/python3.10); without one the target says so and
# passes, skipped.
PY310_VENV := .venv-py310
PYTHON310 ?= $(shell for py in python3.10 \
	"$$(PYENV_VERSION="$$(pyenv versions --bare 2>/dev/null | grep '^3\.10' | tail -n 1)" pyenv which python3.10 2>/dev/null)" \
	/usr/local/bin/python3.10 /usr/bin/python3.10 /opt/python3.10/bin/python3.10 ~/.pyenv/versions/3.10*/bin/python3.10; do \
	"$$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null && { command -v "$$py"; break; }; done)

test-py310:
	@py="$(PYTHON310)"; \
	if [ -z "$$py" ]; then \
		echo "make test-py310: skipped: no Python 3.10 found (PATH, pyenv, /usr/bin, /usr/local/bin); give one with PYTHON310=..."; \
		exit 0; \
	fi; \
	set -ex; \
	rm -rf $(PY310_VENV); \
	"$$py" -m venv $(PY310_VENV); \
	$(PY310_VENV)/bin/python -m pip install --quiet .; \
	cd $(PY310_VENV) && bin/python -I ../tests/core_install_check.py

# The long versions of the reliability tests (marked soak; the default suite runs a short version of each).
soak: $(STAMP) prometheus
	$(PY) -m pytest -m soak -o timeout=1800

# promtool and the Prometheus server for the rule tests and the end-to-end test (Debian package).
prometheus:
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus)

# VictoriaMetrics (single node) and vmalert, the second ruler the rule tests load the rules into
# (tests/test_vmalert.py); both binaries are in the one Debian package.
victoria-metrics:
	@command -v victoria-metrics >/dev/null && command -v vmalert >/dev/null || \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends victoria-metrics)

# ---------------------------------------------------------------- real hosts (slow: not part of `make test`)
# Five agent frameworks, each in its own venv under .venv-hosts/, pinned as a user installs them, with
# this package (editable) beside them: each answers the sampling requests of a small MCP server under
# opentelemetry-instrument against the fake provider, one tool call per scenario (tests/hosts/).
# The report (scenario x host x expected and observed verdict) goes to build/hosts-report.md.
HOSTS_VENV := .venv-hosts
HOSTS      := pydantic-ai fastmcp mcp-use google-adk langchain-mcp-adapters litellm-router
# pydantic-ai and fastmcp run on mcp 2.x (through fastmcp 4), google-adk on mcp 2.x too (it allows
# mcp<3), mcp-use and langchain-mcp-adapters pin mcp<2. google-adk pins opentelemetry-api/sdk <= 1.44
# and google-genai < 3 (its Gemini model class). litellm-router: a fastmcp 4 client whose sampling
# handler is a LiteLLM Router with fallbacks.
pins_pydantic-ai   := "pydantic-ai-slim[mcp,anthropic]==2.68.0"
extras_pydantic-ai := mcp,anthropic,otlp
pins_fastmcp       := "fastmcp[openai]==4.2.3"
extras_fastmcp     := mcp,openai,otlp
pins_mcp-use       := "mcp-use[anthropic]==1.7.1"
extras_mcp-use     := mcp1,anthropic,otlp
pins_google-adk    := "google-adk[mcp]==2.13.0"
extras_google-adk  := mcp,anthropic,google-genai,otlp
pins_langchain-mcp-adapters   := "langchain-mcp-adapters==0.3.2" "langchain-openai==1.7.4"
extras_langchain-mcp-adapters := mcp1,openai,otlp
pins_litellm-router   := "fastmcp==4.2.3" "litellm==1.110.2"
extras_litellm-router := mcp,openai,litellm,otlp

venv-hosts: $(HOSTS:%=$(HOSTS_VENV)/%/.installed-stamp)

.PRECIOUS: $(HOSTS_VENV)/%/.installed-stamp

$(HOSTS_VENV)/%/.installed-stamp: pyproject.toml Makefile
	rm -rf $(HOSTS_VENV)/$*
	$(PYTHON) -m venv $(HOSTS_VENV)/$*
	$(HOSTS_VENV)/$*/bin/python -m pip install --quiet --upgrade pip
	$(HOSTS_VENV)/$*/bin/python -m pip install --quiet $(pins_$*) -e ".[$(extras_$*)]"
	touch $@

test-hosts: $(STAMP) venv-hosts
	OTEL_SAMPLING_HOSTS_VENVS=$(HOSTS_VENV) $(PY) -m pytest -m hosts tests/hosts -p no:cacheprovider

# Regenerate dashboards/*.json and alerts/*.yaml from the metric contract, and their copy shipped in the
# package (otel_sampling/mixin/data, what `otel-sampling dashboards|rules` exports); commit the result.
generate: $(STAMP)
	$(PY) -m otel_sampling.mixin --out .
	$(PY) -m otel_sampling.mixin --out otel_sampling/mixin/data

demo: $(STAMP) prometheus
	$(PY) examples/triage/demo.py

clean:
	rm -rf $(VENV) $(PEERS_VENV) $(BENCH_VENV) $(PY310_VENV) $(HOSTS_VENV) $(MATRIX) .demo .pytest_cache build dist *.egg-info

# ---------------------------------------------------------------- version matrix (slow: not part of `make test`)
# One venv per cell under .matrix/, the package installed with the oldest (pinned) or the newest
# (whatever the declared ranges resolve to today) supported versions, then the tests that cell can
# run. The mcp 1.x cells leave out the modules written against mcp 2.x (tests/conftest.py); the mcp 2.x cells run everything
# (test_mcp_v1.py skips itself there). The oldest release of each provider SDK range has a cell of
# its own (the other SDK and mcp as resolved today, OpenTelemetry at its oldest) that runs the tests
# driving the provider SDKs. The supported ranges in pyproject.toml and the README are the ones
# these cells prove.
MATRIX := .matrix
# The oldest OpenTelemetry: API/SDK 1.43.0 and contrib 0.64b0, the first exporter-prometheus to label
# series with otel_scope_name, which the shipped dashboards and rules select on (it pins the SDK to
# 1.43). Older, the package's code still runs (1.39/0.60b0 passed its span and metric tests), but
# 0.63b0 scrapes have no scope label, and before 0.63b0 the semantic-conventions package does not
# publish the 1.41.0 schema our names follow. The otel-oldest cell runs the whole suite on it, the
# rest as resolved today.
OLDEST := opentelemetry-api==1.43.0 opentelemetry-sdk==1.43.0 \
	opentelemetry-exporter-otlp-proto-http==1.43.0 opentelemetry-exporter-otlp-proto-grpc==1.43.0 \
	opentelemetry-semantic-conventions==0.64b0 opentelemetry-instrumentation==0.64b0 \
	opentelemetry-distro==0.64b0 opentelemetry-exporter-prometheus==0.64b0
MATRIX_CELLS := mcp1-oldest mcp1-newest mcp2-oldest mcp2-newest anthropic-oldest openai-oldest openai2-oldest openai2-newest google-genai-oldest google-genai2-oldest google-genai2-newest litellm-oldest otel-oldest

extras_mcp1 := mcp1,anthropic,openai,otlp,otlp-grpc,prometheus,mixin,test
# google-genai 3.x needs pydantic >= 2.12.5, which the mcp 1.x cells hold back: its tests skip there.
extras_mcp2 := mcp,anthropic,openai,google-genai,otlp,otlp-grpc,prometheus,mixin,test
extras_anthropic := $(extras_mcp2)
extras_openai := $(extras_mcp2)
extras_google := $(extras_mcp2)
extras_openai2 := $(extras_mcp2)
extras_otel := $(extras_mcp2)
# LiteLLM is heavy (about 200 MB with its dependencies): only its own cell installs it.
extras_litellm := $(extras_mcp2),litellm
# mcp 1.10 imports a pydantic internal that pydantic 2.12 removed: it runs with the pydantic of its time.
pins_mcp1-oldest := mcp==1.10.0 pydantic==2.11.7 $(OLDEST)
pins_mcp1-newest := "mcp<2"
pins_mcp2-oldest := mcp==2.1.0 $(OLDEST)
pins_mcp2-newest :=
# The floors of the anthropic and openai extras: anthropic 1.14 is the first release whose request
# options carry the span_name our wrapper reads, openai 3.0 the first on httpx2.
pins_anthropic-oldest := anthropic==1.14.0 $(OLDEST)
pins_openai-oldest := openai==3.0.0 $(OLDEST)
# openai 2.x (on httpx), which frameworks still pin (llama-index-llms-openai: openai<3): its own state.
pins_openai2-oldest := openai==2.0.0 $(OLDEST)
pins_openai2-newest := "openai<3"
# google-genai 3.0 is its first release on httpx2, the HTTP library of the client methods we wrap.
pins_google-genai-oldest := google-genai==3.0.0 $(OLDEST)
# google-genai 2.x (on httpx), which google-adk pins (google-genai>=2.30,<3): its own state.
pins_google-genai2-oldest := google-genai==2.30.0 $(OLDEST)
pins_google-genai2-newest := "google-genai<3"
# The floor of the litellm extra: the release the instrumentor was written against (its Router core
# runs each attempt through litellm.<endpoint>).
pins_litellm-oldest := litellm==1.110.0 $(OLDEST)
pins_otel-oldest := $(OLDEST)
# pyproject's warning filter names an mcp 2.x class, which pytest cannot resolve on mcp 1.x.
tests_mcp1 := -o filterwarnings= tests
tests_mcp2 := tests
tests_otel := tests
# Every module that drives a provider SDK: its wrappers, streams, endings, content, cost, failover,
# sampling callbacks that call it, the range check, and loading under opentelemetry-instrument.
PROVIDER_TESTS := $(wildcard tests/test_anthropic*.py tests/test_openai*.py tests/test_google_genai*.py tests/test_litellm*.py tests/test_provider_*.py) \
	tests/test_target_tables.py tests/test_sampling_with_provider.py tests/test_auto_instrumentation.py \
	tests/test_hostile_provider.py tests/test_endings_total.py tests/test_fault_injection.py \
	tests/test_suppression.py tests/test_degradation.py tests/test_exemplars.py tests/test_semconv.py \
	tests/test_otlp_export.py tests/test_fake_provider.py tests/test_fake_provider_fail_model.py
tests_anthropic := $(PROVIDER_TESTS)
tests_openai := $(PROVIDER_TESTS)
tests_google := $(PROVIDER_TESTS)
tests_openai2 := $(PROVIDER_TESTS)
tests_litellm := $(PROVIDER_TESTS)

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
	@echo "== $*: $$($(MATRIX)/$*/bin/python -m pip freeze 2>/dev/null | grep -i -E '^(mcp|anthropic|openai|google-genai|litellm|opentelemetry-(api|sdk|semantic-conventions|instrumentation))==' | tr '\n' ' ')"
	$(MATRIX)/$*/bin/python -m pytest -q -p no:cacheprovider $(XDIST) $(tests_$(firstword $(subst -, ,$*)))
