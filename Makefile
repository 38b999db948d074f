# Everything a fresh machine needs is made here: `make run` and `make test` create or update
# the virtual environment by themselves (Python 3.11+, pip, make and git are all they assume).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CONFIG ?= config.toml

.PHONY: run validate node-tools app-bridge browser servers test lint bench clean

# The stamp is rebuilt whenever pyproject.toml changes, so a pulled dependency change is installed.
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --editable '.[dev]'
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

# The browser tests drive Debian's chromium (Playwright is told its path; it downloads no browser
# of its own). Installed here when it can be (root on Debian); otherwise the tests fail and name
# the command that installs it.
browser:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	fi

# The tests of several supervisors run Debian's PostgreSQL (initdb and pg_ctl in a temporary
# folder, tests/support/postgres.py) and nginx (the load balancer example, deploy/nginx). Installed
# here when they can be (root on Debian); otherwise those tests fail and name the command.
servers:
	@if { ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ ! -x /usr/sbin/nginx ]; } \
		&& [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql nginx; \
	fi

# Four pytest workers on two cores: since the tests' apps and supervisors are forked ready-made
# (tests/support/forkserver.py) the suite waits more than it computes (backoffs, ping timeouts,
# stop graces, a browser's frames), and more workers overlap the waits: measured on a quiet
# machine, -n 2 6:36, -n 3 6:28, -n 4 6:05 (docs/operations.md). Not `--dist loadgroup`: with
# pytest 9.2 and pytest-xdist 3.8.0 it groups nothing (xdist writes the group into
# `item._nodeid`, which pytest 9 no longer reads).
test: $(BIN)/.installed node-tools browser servers
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -n 4 --durations=20

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
