"""The layering docs/ARCHITECTURE.md promises: only `nvim/` imports pynvim, and the
canonical model imports nothing of ours but itself; and what the host's start leaves out."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import codecompanion_py

PACKAGE = Path(codecompanion_py.__file__).parent
MODEL = ("messages", "events", "errors", "scrubber")


def modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages([str(PACKAGE)], "codecompanion_py."))


def test_nothing_outside_nvim_imports_pynvim():
    engine_side = [name for name in modules() if not name.startswith("codecompanion_py.nvim")]
    assert "codecompanion_py.engine" in engine_side and "codecompanion_py.ui.view" in engine_side
    code = "import importlib, sys\nsys.modules['pynvim'] = None\n" + "".join(
        f"importlib.import_module({name!r})\n" for name in engine_side
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_hosts_start_leaves_the_agent_stack_to_the_first_agent_chat():
    # the engine's host is on the clock of every cold start; an HTTP chat never needs this
    code = "import sys, codecompanion_py.nvim.host\nprint(sorted(sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "codecompanion_py.engine" in result.stdout
    assert "codecompanion_py.chat.acp.session" not in result.stdout
    assert "codecompanion_py.acp.client" not in result.stdout


def test_the_canonical_model_imports_only_itself():
    for name in MODEL:
        tree = ast.parse((PACKAGE / f"{name}.py").read_text())
        ours = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level > 0}
        assert ours <= set(MODEL), f"{name}.py imports {sorted(ours - set(MODEL))}"


def _checker():
    import importlib.util

    path = PACKAGE.parent / "scripts" / "check_structure.py"
    spec = importlib.util.spec_from_file_location("check_structure", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_structure_check_finds_a_circle_but_not_a_type_only_one(tmp_path):
    check = _checker()
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .high import H\n")
    (package / "high.py").write_text("from .low import L\n")
    files = sorted(package.rglob("*.py"))
    assert check.import_problems(files, tmp_path) == []
    (package / "low.py").write_text("def later():\n    from . import high\n")  # a lazy import still runs
    problems = check.import_problems(files, tmp_path)
    assert problems and "pkg.high <-> pkg.low" in problems[0]


def test_the_structure_check_holds_lua_annotations_to_the_parameters(tmp_path):
    check = _checker()
    lua = tmp_path / "mod.lua"
    lua.write_text(
        "local M = {}\n---@param chat table\n---@param text string\nfunction M.send(chat, text) end\n"
        "---@param buf integer\nM.open = function(bufnr) end\nfunction M.bare(x) end\nreturn M\n"
    )
    problems = check.annotation_problems([lua], tmp_path)
    assert problems == [
        "mod.lua:6: M.open(bufnr) is annotated with @param buf",
        "mod.lua:7: M.bare has no LuaCATS annotation",
    ]


def test_the_product_holds_its_structure():
    """`make lint` runs the same check; here a change that breaks it fails the tests too."""
    result = subprocess.run(
        [sys.executable, str(PACKAGE.parent / "scripts" / "check_structure.py")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-3000:]
