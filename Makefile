# Everything runs from a virtual environment that the first target creates, so a fresh
# clone needs only `make demo` or `make test`. `make demo` installs recordkit and its
# runtime dependencies only; the targets of `make test` add the dev extra (linters, type
# checker, docs, test tools) to the same environment, once.
VENV ?= .venv
PY := $(VENV)/bin/python
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev

.PHONY: install install-dev keypoints chromium demo test lint typecheck docs unit unit-fast bench bench-peers clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# recordkit and what it needs to run, installed as a user installs it (a wheel, no
# development tools); installed again when its sources change. The versions are the
# tested set (dev-constraints.txt, below): the demo runs on what the tests ran on, and
# the dev install that follows in `make test` keeps them (without the pins pip took the
# newest of nine packages, Pillow and protobuf among them, which the dev install then
# replaced).
SOURCES := $(shell find sdk plugins/recordkit_codecs -name '*.py' -o -name py.typed)
$(RUNTIME): pyproject.toml dev-constraints.txt $(SOURCES) | $(PY)
	$(PY) -m pip install --quiet . -c dev-constraints.txt
	touch $(RUNTIME)

# The dev extra on top, with recordkit installed editable (the tests run the sources):
# ruff, mypy, mkdocs, pytest, pre-commit, the benchmark comparison, the viewer's web stack
# and Playwright (which drives the system's Chromium, see `chromium`); the beam, grain and
# torch extras, whose writer and readers the tests run (torch as its CPU build: about 750 MB and a
# minute, where the default build would pull several GB of CUDA libraries).
# dev-constraints.txt pins the whole set that was tested together (pip freeze of a
# working environment): without it, pip's resolver backtracks for minutes through the
# botocore/aiobotocore ranges of moto and s3fs and ends on an sdist that cannot build.
# setuptools reports ("Editable installation.", a warning pip shows even with --quiet)
# that an editable install of packages mapped from sdk/ and plugins/ goes through an
# import hook rather than a plain path entry: information about that layout, nothing to
# act on, so it is filtered out of this one command's output.
TORCH_CPU ?= torch==2.13.0+cpu
$(DEV): pyproject.toml dev-constraints.txt $(RUNTIME)
	PYTHONWARNINGS="ignore:Editable installation" \
		$(PY) -m pip install --quiet -e '.[dev,grain,beam,view]' '$(TORCH_CPU)' -c dev-constraints.txt
	touch $(DEV)

install: $(RUNTIME)

install-dev: $(DEV)

## The example third-party plugin, installed as a user would (not editable, not on
## sys.path): the tests prove recordkit finds it through its entry point alone. Built
## from a copy so that no build/ or egg-info lands in the source tree; reinstalled when
## its sources change.
KEYPOINTS := plugins/recordkit-keypoints
KEYPOINTS_STAMP := $(VENV)/.keypoints-installed
$(KEYPOINTS_STAMP): $(DEV) $(KEYPOINTS)/pyproject.toml $(wildcard $(KEYPOINTS)/src/recordkit_keypoints/*)
	rm -rf build/keypoints && mkdir -p build && cp -r $(KEYPOINTS) build/keypoints
	rm -rf build/keypoints/build build/keypoints/src/*.egg-info
	$(PY) -m pip install --quiet --no-deps --no-build-isolation --force-reinstall \
		--disable-pip-version-check ./build/keypoints
	rm -rf build/keypoints
	touch $(KEYPOINTS_STAMP)

keypoints: $(KEYPOINTS_STAMP)

## Chromium from the system's packages, for the viewer's browser tests (Playwright drives
## it; its own browser download is not used): installed with apt-get where missing.
chromium:
	.ci/chromium

## The main job: write a multimodal dataset generated on the fly, read it back, check it.
demo: $(RUNTIME)
	$(PY) examples/demo.py --out demo_output

## Lint, type checks, the docs build and the whole test suite. The tests run in two
## processes that take each other's queued tests when one runs dry (--dist worksteal): a
## few tests take tens of seconds, and with fixed chunks one process could end on them
## while the other waits.
## The tests write Python's bytecode caches (__pycache__, ignored by git) even where the
## environment turns them off with PYTHONDONTWRITEBYTECODE, as many Docker images and CI
## images do: recordkit's sources are installed editable, so without the caches every
## process the tests start (subprocesses, DataLoader, Grain and Beam workers, the
## benchmarks' children) compiled recordkit's modules again, about 0.15 s of CPU each
## (`import recordkit`: 0.67 s, 0.52 s from the caches); three subprocess-heavy test
## files took 22% less CPU. An empty value counts as unset. `make unit-fast` does the same.
## The checks before the tests run side by side, two at a time (the machines CI and the
## docs assume have two cores): mypy (about 21 s of CPU on a fresh clone, whose first run
## has no cache) beside ruff, the docs build and the example plugin's install, each one's
## output printed whole when it ends. ruff, mypy and the docs build on a quiet machine,
## three runs each, alternating: 29.4 29.0 28.7 s one after the other, 21.4 20.6 21.2 s
## side by side (the same CPU). A failed check still fails `make test`, once the ones
## running beside it end. The install comes first, its output as it goes.
test: $(DEV)
	$(MAKE) --no-print-directory --jobs=2 --output-sync=target lint typecheck docs keypoints chromium
	$(MAKE) --no-print-directory unit

lint: $(DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(DEV)
	$(VENV)/bin/mypy

## The stamp (touched as the build starts, renamed once the strict build passed) lets
## tests/docs/test_site_tables.py read this site (RECORDKIT_BUILT_SITE, set by `unit`)
## rather than build its own while no source is newer: about 10 s of CPU in `make test`.
docs: $(DEV)
	rm -f build/site.built-strict && mkdir -p build && touch build/site.building
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir build/site
	mv build/site.building build/site.built-strict

unit: $(DEV) $(KEYPOINTS_STAMP) chromium
	PYTHONDONTWRITEBYTECODE= RECORDKIT_BUILT_SITE=build/site $(VENV)/bin/pytest -n 2 --dist worksteal --durations=15

## The tests without those marked slow (subprocesses, worker processes, benchmarks):
## for development; `make test` runs them all.
unit-fast: $(DEV) $(KEYPOINTS_STAMP) chromium
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest -n 2 --dist worksteal -m "not slow"

bench: $(DEV)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/run.py

## recordkit against WebDataset and the other loaders (issue 31): each peer in its own venv
## under benchmarks/out/venvs/; not part of `make test` (tests/benchmarks/test_peers_smoke.py
## runs it at toy size without the peers).
bench-peers: $(DEV)
	$(PY) benchmarks/peers.py --records 1500 --rounds 5

clean:
	rm -rf $(VENV) build demo_output
