"""Where the bridge sits: it uses the ACP client's JSON-RPC, never the other way round, and
its contract (what a user adapter imports) depends on no other part of it."""

from __future__ import annotations

import ast
from pathlib import Path

import codecompanion_py

PACKAGE = Path(codecompanion_py.__file__).parent


def imported(path: Path) -> set[str]:
    """The modules `path` imports (relative imports resolved), TYPE_CHECKING ones too."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = parts[: len(parts) - node.level] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_acp_client_never_imports_the_bridge():
    for path in (PACKAGE / "acp").glob("*.py"):
        assert not any(name.startswith("codecompanion_py.acp_bridge") for name in imported(path)), path.name


def test_the_contract_depends_on_no_other_part_of_the_bridge():
    ours = {n for n in imported(PACKAGE / "acp_bridge" / "contract.py") if n.startswith("codecompanion_py.acp_bridge")}
    assert ours == set()
