# Two commands: `make run` opens the workbench on sample_docs/, `make test` runs every test.
# Both create .venv when missing and (re)install only when pyproject.toml changed, so the
# slow llama-cpp-python source build happens once per machine (pip caches the wheel too).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
SHARED := $(CURDIR)/../shared

.PHONY: run test setup conformance clean-venv

run: $(STAMP)
	$(VENV)/bin/ctxfst-tui sample_docs

test: $(STAMP)
	$(PY) -m pytest -q
	@if [ -f "$(SHARED)/conformance/check.py" ]; then \
		echo "== conformance suite ($(SHARED)/conformance)"; \
		$(PY) "$(SHARED)/conformance/check.py" --cli "$(CURDIR)/$(VENV)/bin/ctxfst-tui"; \
	else echo "== ../shared/conformance not found: conformance suite skipped"; fi

conformance: $(STAMP)
	$(PY) "$(SHARED)/conformance/check.py" --cli "$(CURDIR)/$(VENV)/bin/ctxfst-tui" -v

setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed (set PYTHON=...)")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc 2>/dev/null || echo 2) $(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

clean-venv:
	rm -rf $(VENV)
