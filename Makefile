# Everything runs from a virtual environment that the first target creates, so a fresh
# clone needs only `make demo` or `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test lint typecheck docs unit bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## The main job: write a multimodal dataset generated on the fly, read it back, check it.
demo: $(STAMP)
	$(PY) examples/demo.py --out demo_output

## Lint, type checks, the docs build and the whole test suite.
test: lint typecheck docs unit

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir build/site

unit: $(STAMP)
	$(VENV)/bin/pytest -n 2

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build demo_output
