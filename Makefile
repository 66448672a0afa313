# Everything runs from a virtual environment that the first target creates, so a fresh
# clone needs only `make demo` or `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install keypoints demo test lint typecheck docs unit unit-fast bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## The example third-party plugin, installed as a user would (not editable, not on
## sys.path): the tests prove recordkit finds it through its entry point alone. Built
## from a copy so that no build/ or egg-info lands in the source tree; reinstalled when
## its sources change.
KEYPOINTS := plugins/recordkit-keypoints
KEYPOINTS_STAMP := $(VENV)/.keypoints-installed
$(KEYPOINTS_STAMP): $(STAMP) $(KEYPOINTS)/pyproject.toml $(wildcard $(KEYPOINTS)/src/recordkit_keypoints/*)
	rm -rf build/keypoints && mkdir -p build && cp -r $(KEYPOINTS) build/keypoints
	rm -rf build/keypoints/build build/keypoints/src/*.egg-info
	$(PY) -m pip install --quiet --no-deps --no-build-isolation --force-reinstall \
		--disable-pip-version-check ./build/keypoints
	rm -rf build/keypoints
	touch $(KEYPOINTS_STAMP)

keypoints: $(KEYPOINTS_STAMP)

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

unit: $(STAMP) $(KEYPOINTS_STAMP)
	$(VENV)/bin/pytest -n 2

## The tests without those marked slow (subprocesses, worker processes, benchmarks):
## for development; `make test` runs them all.
unit-fast: $(STAMP) $(KEYPOINTS_STAMP)
	$(VENV)/bin/pytest -n 2 -m "not slow"

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build demo_output
