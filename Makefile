# Everything a fresh machine needs is made here: `make run` and `make test` create or update
# the virtual environment by themselves (Python 3.11+, pip, make and git are all they assume).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CONFIG ?= config.toml

.PHONY: run validate node-tools app-bridge system-packages test ready checks collected lint bench clean

# Python writes its bytecode caches (__pycache__/, ignored by git) even where the environment
# says not to: without them every Python process the tests start compiles the project again, and
# each pytest worker rewrites every test module's asserts again (docs/operations.md, "The suite's
# set-up"). An empty value is the same as unset for Python.
export PYTHONDONTWRITEBYTECODE :=

# The stamp is rebuilt whenever pyproject.toml changes, so a pulled dependency change is installed.
# The packages are installed by uv (pinned), compiled as pip compiles them: the same versions pip
# picks, in about 7 s where pip takes about 22. The environment gets no pip of its own (unpacking
# one took 7 of a fresh clone's first 20 s): the machine's pip puts uv into it (`--python`, pip
# 22.3 and later); with no pip, or an older one, the environment gets its own pip to do it.
UV_VERSION := 0.13.9
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv --without-pip $(VENV)
	$(PYTHON) -m pip --python $(BIN)/python install --quiet uv==$(UV_VERSION) 2>/dev/null || \
		{ $(BIN)/python -m ensurepip --upgrade >/dev/null && \
		$(BIN)/python -m pip install --quiet uv==$(UV_VERSION); }
	$(BIN)/uv pip install --python $(BIN)/python --quiet --compile-bytecode --editable '.[dev]'
	touch $@

# The product on the bundled apps, in the foreground until Ctrl-C. The venv's bin comes first on
# PATH so that the example app's `python3` is the interpreter that has the MCP SDK installed.
run: $(BIN)/.installed
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/mcpapps run --config $(CONFIG)

validate: $(BIN)/.installed
	$(BIN)/mcpapps validate --config $(CONFIG)

# Pinned Node programs the tests run against (the reference MCP servers); see tools/package.json.
node-tools:
	bash scripts/node-tools.sh

# Rebuild the vendored MCP Apps host library (web/static/app-bridge.js) from the pins.
app-bridge:
	bash scripts/vendor-app-bridge.sh

# System packages the tests run, installed here when they can be (root on Debian), in one apt-get
# for those missing; otherwise the tests that need one fail and name the command that installs it.
# The browser tests drive Debian's Chromium headless shell (Playwright is told its path; it
# downloads no browser of its own; tests/support/chromium.py says why the shell). The tests of
# several supervisors run PostgreSQL (initdb and pg_ctl in a temporary folder,
# tests/support/postgres.py) and nginx (the load balancer example, deploy/nginx).
SYSTEM_PACKAGES := /usr/bin/chromium-headless-shell:chromium-headless-shell \
	/usr/lib/postgresql/*/bin/initdb:postgresql /usr/sbin/nginx:nginx
system-packages:
	@missing="$$(for p in $(SYSTEM_PACKAGES); do ls $${p%%:*} >/dev/null 2>&1 || echo $${p##*:}; done)"; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	fi

# Four pytest workers on two cores: since the tests' apps and supervisors are forked ready-made
# (tests/support/forkserver.py) the suite waits more than it computes (backoffs, ping timeouts,
# stop graces, a browser's frames), and more workers overlap the waits: measured on a quiet
# machine, -n 2 6:36, -n 3 6:28, -n 4 6:05 (docs/operations.md). Not `--dist loadgroup`: with
# pytest 9.2 and pytest-xdist 3.8.0 it groups nothing (xdist writes the group into
# `item._nodeid`, which pytest 9 no longer reads).
#
# What comes before the tests is made side by side (a make of its own with --jobs): the packages,
# then the static checks beside one collection of the tests (it leaves their rewritten asserts in
# __pycache__ for the four workers, which would otherwise each rewrite them all); the Node tools
# (downloads) and the system packages meanwhile. A test that cannot be collected is reported by
# the run itself.
test:
	@$(MAKE) --no-print-directory --jobs=3 --output-sync=target ready
	$(BIN)/python -m pytest -n 4 --durations=20

ready: checks collected node-tools system-packages

collected: $(BIN)/.installed
	$(BIN)/python -m pytest --collect-only -q >/dev/null || true

checks: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

lint: $(BIN)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(BIN)/.installed
	$(BIN)/python bench/discovery.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/calls.py
	$(BIN)/python bench/proxy.py
	$(BIN)/python bench/turns.py
	$(BIN)/python bench/httpapps.py
	$(BIN)/python bench/idle.py
	$(BIN)/python bench/chatturns.py
	$(BIN)/python bench/filesaves.py

clean:
	rm -rf $(VENV) .tools .pytest_cache .ruff_cache .hypothesis .screenshots
