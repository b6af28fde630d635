# The console's two commands: `make run` and `make test`. See README.md.
SHELL := /bin/bash
# Python writes and reuses bytecode even where the environment says not to: without it every
# process `make run` and the tests start (web, workers, the test processes themselves)
# compiles every module of the console from source again (collecting the suite: 11.7 s of
# a test process's time instead of 5.6 s).
export PYTHONDONTWRITEBYTECODE :=
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# A working Python 3.12+: from PATH first, then any pyenv version (its shims may be inactive).
define FIND_PYTHON
for c in python3.12 python3.13 python3.14 python3 python; do \
  if command -v $$c >/dev/null 2>&1 && $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then \
    command -v $$c; exit 0; fi; \
done; \
if command -v pyenv >/dev/null 2>&1; then \
  root=$$(pyenv root); \
  for v in $$(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9]|[2-9][0-9])(\.|$$)' | sort -V); do \
    p=$$root/versions/$$v/bin/python3; \
    if [ -x $$p ] && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then \
      echo $$p; exit 0; fi; \
  done; \
fi; exit 1
endef

# npm for the browser libraries (frontend/package.json): from PATH first, then nvm's newest node.
define FIND_NPM
if command -v npm >/dev/null 2>&1; then command -v npm; exit 0; fi; \
for p in $$(ls -d $${NVM_DIR:-$$HOME/.nvm}/versions/node/v*/bin/npm 2>/dev/null | sort -V -r); do \
  if [ -x $$p ]; then echo $$p; exit 0; fi; \
done; exit 1
endef
NODE_STAMP := frontend/node_modules/.installed

.PHONY: run test test-k8s lint bench install clean messages screenshots

$(STAMP): pyproject.toml cli/pyproject.toml
	@base=$$($(FIND_PYTHON)) || { echo "error: no Python 3.12 or newer found (PATH, then pyenv)"; exit 1; }; \
	  echo "Using $$base ($$($$base --version))"; \
	  [ -x $(PY) ] || $$base -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -m pip install --quiet --no-deps -e ./cli
	@touch $(STAMP)

# xterm.js and its fit add-on, as the lock file pins them; served as static files, never committed.
$(NODE_STAMP): frontend/package.json frontend/package-lock.json
	@npm=$$($(FIND_NPM)) || { echo "error: no npm found (PATH, then nvm); install Node.js with npm"; exit 1; }; \
	  echo "Using $$npm ($$($$npm --version))"; \
	  cd frontend && PATH="$$(dirname $$npm):$$PATH" $$npm ci --no-audit --no-fund --loglevel=error
	@touch $(NODE_STAMP)

install: $(STAMP) $(NODE_STAMP)
	@$(PY) -m console.catalogues

run: install
	$(PY) -m console.supervisor

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m djlint templates --lint --quiet
	$(VENV)/bin/lint-imports --no-cache

# Three test processes on two cores, a test file each at a time: most tests wait on real
# processes (jobs, servers, Chromium), so a process per core leaves the machine half idle.
# The longest files start first (tests/file_seconds.py), not the files with the most tests,
# as pytest-xdist would. Measured from a clean clone on a two-core machine: the suite took
# 681 s in two processes, 583-586 s in three (the 200-job chaos test took 106-112 s, its run
# within a budget of 150 s).
PYTEST_WORKERS ?= 3
# The runtimes are made first, side by side (instant once made: they are kept once per
# machine, see RUNTIMES_DIR), rather than one at a time by whichever test needs one.
test: lint
	@started=$$(date +%s); \
	$(PY) manage.py verify && \
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS); \
	code=$$?; took=$$(( $$(date +%s) - started )); \
	echo "make test: checks, runtimes and suite took $$((took / 60)) min $$((took % 60)) s"; \
	exit $$code

# The Kubernetes flow against a real cluster (KUBECONFIG; see docs/kubernetes.md).
test-k8s: install
	$(PY) -m pytest tests/k8s_real -rs $(PYTEST_ARGS)

# The browser tests with their screenshots (test-artifacts/screenshots/), to look at the
# pages: `make test` leaves them out, they cost its browser tests about a minute. A part:
# `make screenshots PYTEST_ARGS="-k clusters"`.
screenshots: install
	SCREENSHOTS=1 $(PY) -m pytest tests/browser -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

bench: install
	$(PY) -m tests.bench $(BENCH_ARGS)

messages: install
	LANG=C.UTF-8 LC_ALL=C.UTF-8 $(PY) manage.py makemessages -l zh_Hans --no-obsolete --ignore 'var/*' --ignore '.venv/*' --ignore 'tests/*'
	$(PY) -m console.catalogues

clean:
	rm -rf $(VENV) var frontend/node_modules
