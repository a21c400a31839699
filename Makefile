# Everything a fresh machine with only Python 3 needs: `make test`, `make demo`, `make bench`,
# and `make lint` (ruff, mypy, the structure check and the Lua check).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Real ACP agents for the integration tests, from npm into .venv/agents, once: Codex (about
# 225 MB) and Claude Code (about 60 MB), with their dependencies and the MCP server below
# about 330 MB on disk. `make test AGENTS=0` (or AGENTS=0 in the
# environment) does not install them; without them, or without npm, their tests are
# skipped with the reason.
AGENTS ?= 1
AGENT_PACKAGES := @zed-industries/codex-acp@0.16.0 @zed-industries/claude-agent-acp@0.23.1
AGENTS_STAMP := $(VENV)/agents/.installed
# The reference MCP server (stdio and streamable HTTP) for the MCP tests, about 15 MB, with
# the agents (AGENTS=0 leaves it out too).
MCP_PACKAGES := @modelcontextprotocol/server-everything@2026.8.31
MCP_STAMP := $(VENV)/agents/.mcp-installed

LUA_FILES := $(shell find lua plugin -name "*.lua" | sort) build.lua

.PHONY: test lint demo bench figures venv agents clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,lint]'
	touch $(STAMP)

agents: $(STAMP)
	@if [ -f $(AGENTS_STAMP) ]; then :; \
	elif [ "$(AGENTS)" = "0" ]; then \
		echo "AGENTS=0: the real ACP agents are not installed; their tests will be skipped"; \
	elif command -v npm >/dev/null 2>&1; then \
		echo "installing two real ACP agents for the integration tests into $(VENV)/agents, once:"; \
		echo "  $(AGENT_PACKAGES)"; \
		echo "  about 330 MB on disk with their dependencies (Codex about 225 MB, Claude Code about 60 MB)"; \
		echo "  to skip them (their tests are then skipped): make test AGENTS=0"; \
		npm install --silent --no-audit --no-fund --prefix $(VENV)/agents $(AGENT_PACKAGES) && touch $(AGENTS_STAMP) \
			|| echo "npm could not install the agents: the real-agent tests will be skipped"; \
	else echo "npm not found: the real ACP agents are not installed; their tests will be skipped"; fi
	@if [ -f $(MCP_STAMP) ] || [ "$(AGENTS)" = "0" ] || ! command -v npm >/dev/null 2>&1; then :; \
	else \
		echo "installing the reference MCP server for the MCP tests into $(VENV)/agents, once: $(MCP_PACKAGES)"; \
		npm install --silent --no-audit --no-fund --prefix $(VENV)/agents $(MCP_PACKAGES) && touch $(MCP_STAMP) \
			|| echo "npm could not install the MCP server: its tests will be skipped"; \
	fi

# -rs: each skipped test is listed with its reason (a missing agent, npm or tool).
test: $(STAMP) agents
	$(PY) -m pytest -q -rs

# luacheck when it is installed (Debian's lua-check); Neovim's own LuaJIT always compiles
# every file and refuses global writes and unknown globals.
lint: $(STAMP)
	$(PY) -m ruff check codecompanion_py tests bench scripts rplugin
	$(PY) -m ruff format --check codecompanion_py tests bench scripts rplugin
	$(PY) -m mypy
	$(PY) scripts/check_structure.py
	@if command -v luacheck >/dev/null 2>&1; then luacheck -q $(LUA_FILES); \
	else echo "luacheck not found: the Lua files are checked by Neovim's compiler only"; fi
	$(VENV)/bin/nvim -l scripts/check_lua.lua $(LUA_FILES)

demo: $(STAMP)
	$(PY) -m codecompanion_py.demo.launch

bench: $(STAMP)
	$(PY) bench/run.py

# The README's and docs/BENCHMARKS.md's figures from the last `make bench`.
figures:
	$(PY) scripts/refresh_figures.py

clean:
	rm -rf $(VENV) build *.egg-info
