# The two commands a newcomer needs: `make lab` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Tests run on CPU with 8 fake devices (tests/conftest.py sets both, for `make test`
# and a plain pytest alike); every other recipe, `make lab` included, leaves JAX
# to use whatever accelerator it finds.
# Bytecode caches are written even where PYTHONDONTWRITEBYTECODE is set: the suite
# starts dozens of interpreters (kernels, fresh-import checks, benchmarks) that
# each import lens, and pytest caches its rewritten test modules (all git-ignored).
TEST_ENV := JAX_PLATFORMS=cpu XLA_FLAGS="$(XLA_FLAGS) --xla_force_host_platform_device_count=8" \
	PYTHONDONTWRITEBYTECODE=
# Tools that JupyterLab calls by name (jupyter-builder, jupyter-labextension) live in
# the venv: put it first on PATH for every recipe, as an activated venv would.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# Two jobs: on a fresh clone the venv and the extension's node_modules install side by
# side (each recipe still runs alone: `test` and `lab` are one recipe each).
MAKEFLAGS += --jobs=2

.PHONY: lab test install lint bench notebooks docs clean flax-tests flax-examples flax-guides flax-docstrings api-diff projects

# The editable install builds lens with the venv's own build backend (pyproject's
# [build-system], less JupyterLab, which the lab extra brings, and with hatchling's
# `editables`), and SKIP_JUPYTER_BUILDER turns off hatch-jupyter-builder's npm step:
# in an isolated build env pip would install JupyterLab a second time, and run
# `npm install` and the extension's build in extension/ while `npm ci` below is writing
# the same node_modules (twice the CPU time, and a race). The rules below build the
# extension once, from the committed lock.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile "hatchling>=1.21" "hatch-jupyter-builder>=0.9" editables
	SKIP_JUPYTER_BUILDER=1 $(PY) -m pip install -q --no-compile --no-build-isolation \
		-e ".[test,lab,bench]"
	touch $@

# pip byte-compiles one file at a time (~20 s of a fresh install); compileall uses
# every core, beside the extension's build, and skips what nothing imports (the
# packages' own tests, pip, setuptools). Left to import time instead, the test
# suite's workers, kernels and subprocesses would each compile the same modules.
$(VENV)/.compiled: $(VENV)/.installed
	$(PY) -m compileall -q -j 0 -x '/(tests?|pip|setuptools)/' \
		$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
	touch $@

# The JupyterLab extension (TypeScript in extension/), built with the venv's JupyterLab
# into lens/labextension and linked into the venv, so `jupyter labextension list`
# shows lens-pack enabled.
EXT_SRC := extension/package.json extension/tsconfig.json $(wildcard extension/src/*.ts) extension/src/pack_trace.schema.json extension/src/palette.json extension/src/glossary.json extension/style/index.css

# `npm ci`: exactly the committed lock, which it never rewrites.
extension/node_modules/.installed: extension/package.json extension/package-lock.json
	cd extension && npm ci --no-audit --no-fund
	touch $@

lens/labextension/static/style.js: $(EXT_SRC) extension/node_modules/.installed $(VENV)/.installed
	cd extension && npm run build

$(VENV)/.labextension: lens/labextension/static/style.js
	$(VENV)/bin/jupyter labextension develop --overwrite .
	touch $@

install: $(VENV)/.installed $(VENV)/.labextension

RUFF_CHECK := lens tests benchmarks parity docs notebooks conftest.py
RUFF_FORMAT := lens tests benchmarks parity conftest.py

# Debian's Chromium for the browser test (Playwright cannot download its own here).
CHROMIUM ?= /usr/bin/chromium
$(CHROMIUM):
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
		|| (echo "Could not install chromium; the browser test needs $(CHROMIUM)" && false)

## Start JupyterLab on notebooks/ with lens installed.
lab: $(VENV)/.installed $(VENV)/.compiled $(VENV)/.labextension
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks --no-browser --allow-root --ip=127.0.0.1

## Run every test: lint, unit and doctests.
## The extension's vitest needs only its node_modules, so it runs as a prerequisite:
## on a fresh clone while pip waits on the network (on a built tree, first). ruff and
## pyright (about 30 s of one core) run beside pytest, niced, so that they mostly take
## the time a pytest worker spends waiting (on a browser, a kernel, a subprocess).
## Their reports are printed after pytest's; the recipe fails if any check failed.
test: $(VENV)/.installed $(VENV)/.compiled $(VENV)/.labextension $(CHROMIUM) extension-unit
	@lint=$$(mktemp); typed=$$(mktemp); \
	(nice -n 5 $(PY) -m ruff check $(RUFF_CHECK) && \
		nice -n 5 $(PY) -m ruff format --check $(RUFF_FORMAT)) > $$lint 2>&1 & ruff=$$!; \
	nice -n 5 $(VENV)/bin/pyright > $$typed 2>&1 & pyright=$$!; \
	echo "ruff and $(VENV)/bin/pyright (in the background)"; \
	$(TEST_ENV) $(PY) -m pytest -n 2 --dist loadfile tests lens notebooks/*.ipynb \
		--nbval --nbval-sanitize-with tests/nbval_sanitize.cfg; tests=$$?; \
	wait $$ruff; style=$$?; echo "ruff check && ruff format --check:"; cat $$lint; \
	echo "cd extension && npx vitest run:"; cat $(UNIT_LOG); ts=$$(cat $(UNIT_LOG).rc); \
	wait $$pyright; types=$$?; echo "$(VENV)/bin/pyright:"; cat $$typed; \
	rm -f $$lint $$typed; \
	test $$tests = 0 -a $$style = 0 -a $$ts = 0 -a $$types = 0

# vitest's report and exit status, which `test` prints and checks after pytest's.
UNIT_LOG := extension/.vitest.log
.PHONY: extension-unit
extension-unit: extension/node_modules/.installed
	(cd extension && npx vitest run) > $(UNIT_LOG) 2>&1; echo $$? > $(UNIT_LOG).rc

lint: $(VENV)/.installed
	$(PY) -m ruff check $(RUFF_CHECK)
	$(PY) -m ruff format --check $(RUFF_FORMAT)
	$(VENV)/bin/pyright

## Benchmarks lens against flax (writes benchmarks/RESULTS.md).
bench: $(VENV)/.installed
	$(PY) -m benchmarks.run

## Flax's own tests (tests/nnx and the files directly in tests/ by default) on real flax
## and on lens: writes docs/flax-tests.md.
## SUITES="nnx top linen core" for more; the flax (oracle) run is cached in parity/.cache.
SUITES ?= nnx top
flax-tests: $(VENV)/.installed
	$(PY) -m parity.flax_tests -n 2 $(foreach s,$(SUITES),--suite $(s))

## Flax's example models' tests (examples/ of the flax sdist, one run per folder as its
## CI runs them) on real flax and on lens: writes docs/flax-examples.md. Their input
## pipelines need TensorFlow, so they run in a venv of their own: the dev venv's
## packages plus parity/examples-requirements.txt.
EXAMPLES_VENV := parity/.cache/examples-venv
$(EXAMPLES_VENV)/.installed: $(VENV)/.installed parity/examples-requirements.txt
	$(PYTHON) -m venv $(EXAMPLES_VENV)
	$(VENV)/bin/pip freeze --exclude-editable > $(EXAMPLES_VENV)/dev.txt
	$(EXAMPLES_VENV)/bin/pip install --quiet -r $(EXAMPLES_VENV)/dev.txt \
		-r parity/examples-requirements.txt
	touch $@
flax-examples: $(EXAMPLES_VENV)/.installed
	$(PY) -m parity.flax_tests --suite examples --python $(EXAMPLES_VENV)/bin/python \
		--out docs/flax-examples.md

## Real projects built on Flax (qwix, numpyro, CLU, RecurrentGemma, tunix, bonsai, ott,
## haiku, flaxformer, aqt, e3nn-jax, netket, keras, brax, gemma, gymnax, orbax): their own test suites on real flax and on lens; writes the
## table in docs/porting.md.
## PROJECTS="qwix" for some of them; the flax (oracle) runs are cached in parity/.cache.
PROJECTS ?=
projects: $(VENV)/.installed
	$(PY) -m parity.projects --write $(PROJECTS)

## Flax's NNX guide notebooks (docs_nnx/ of the flax sdist) on real flax and on lens,
## each page in a fresh kernel on CPU: writes docs/flax-guides.md.
flax-guides: $(VENV)/.installed
	JAX_PLATFORMS=cpu $(PY) -m parity.flax_guides

## Flax's docstring examples (what its CI runs with --doctest-modules) on real flax and
## on lens, each module in a fresh process: writes docs/flax-docstrings.md.
flax-docstrings: $(VENV)/.installed
	JAX_PLATFORMS=cpu $(PY) -m parity.flax_docstrings --out docs/flax-docstrings.md

## Flax's public modules and names that lens lacks (the table tests/test_flax_surface.py checks).
api-diff: $(VENV)/.installed
	$(PY) -m parity.surface

## Re-run the notebooks and store their outputs (after editing one in JupyterLab):
## on the CPU with 8 devices, as nbval runs them.
notebooks: $(VENV)/.installed
	JAX_PLATFORMS=cpu XLA_FLAGS=--xla_force_host_platform_device_count=8 \
		$(PY) tests/notebook_outputs.py

## Build the documentation (guide, API and error reference) into docs/_build/.
docs: $(VENV)/.installed
	$(PY) docs/build.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
