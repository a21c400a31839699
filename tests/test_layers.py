"""The layering docs/ARCHITECTURE.md promises: only `nvim/` imports pynvim, and the
canonical model imports nothing of ours but itself."""

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


def test_the_canonical_model_imports_only_itself():
    for name in MODEL:
        tree = ast.parse((PACKAGE / f"{name}.py").read_text())
        ours = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level > 0}
        assert ours <= set(MODEL), f"{name}.py imports {sorted(ours - set(MODEL))}"
