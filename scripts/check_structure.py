"""The structure `make lint` holds the product to, beside ruff, mypy and luacheck.

* No import circle between modules and none between rooms (a room is a top-level module or
  package of `codecompanion_py`): a lower layer never imports a higher one. Imports under
  `if TYPE_CHECKING:` are types only and do not count; imports inside functions do.
* No product file over 600 lines, Python or Lua.
* The Lua stays thin: under 7,800 lines of code in all (lines that are neither blank nor a
  comment, so the LuaCATS annotations asked for below do not count against it).
  The CodeCompanion extension API and the CLI terminals are Lua by nature (extensions are Lua
  code calling Lua), as are the code review's quickfix, comments and diff views and the
  rewind's buffer reloads: what the room above the first 6,000 lines is for.
* Every exported Lua function (`function M.name(...)`, `M.name = function(...)`) carries a
  LuaCATS `---@param` line for each of its parameters, under the same names in the same
  order, so the annotations cannot drift from the code they describe.

Run as `python scripts/check_structure.py`; it prints each problem and exits 1 if any.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "codecompanion_py"
MAX_LINES = 600
MAX_LUA_LINES = 7800


def python_files() -> list[Path]:
    return sorted(p for p in (ROOT / PACKAGE).rglob("*.py") if "__pycache__" not in p.parts)


def lua_files() -> list[Path]:
    found = [*(ROOT / "lua").rglob("*.lua"), *(ROOT / "plugin").rglob("*.lua"), ROOT / "build.lua"]
    return sorted(p for p in found if p.is_file())


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# --- imports ----------------------------------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that runs, outside `if TYPE_CHECKING:` blocks."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def imports_of(path: Path, modules: set[str], root: Path = ROOT) -> set[str]:
    """The modules of ours that `path` imports at run time."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import sub` imports the submodule when there is one, else a name of pkg
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a name: its module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def room_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def import_problems(files: Iterable[Path], root: Path = ROOT) -> list[str]:
    paths = {module_name(p, root): p for p in files}
    graph = {name: imports_of(path, set(paths), root) for name, path in paths.items()}
    problems = [f"import circle: {' <-> '.join(c)}" for c in _cycles(graph)]
    rooms: dict[str, set[str]] = {}
    for name, targets in graph.items():
        rooms.setdefault(room_of(name), set()).update(room_of(t) for t in targets if room_of(t) != room_of(name))
    for cycle in _cycles(rooms):
        ties = [
            f"{a} -> {b}"
            for a in cycle
            for b in cycle
            if a != b and any(room_of(t) == b for n, ts in graph.items() if room_of(n) == a for t in ts)
        ]
        problems.append(f"rooms that import each other (an arrow back up): {', '.join(ties)}")
    return problems


# --- sizes ------------------------------------------------------------------------------


def size_problems(py: list[Path], lua: list[Path]) -> list[str]:
    problems = []
    total_lua = 0
    for path in [*py, *lua]:
        lines = path.read_text().splitlines()
        count = len(lines)
        if path.suffix == ".lua":
            total_lua += sum(1 for line in lines if line.strip() and not line.lstrip().startswith("--"))
        if count > MAX_LINES:
            problems.append(f"{path.relative_to(ROOT)}: {count} lines, over {MAX_LINES}: split it along its seams")
    if total_lua >= MAX_LUA_LINES:
        problems.append(f"the Lua is {total_lua} lines of code, under {MAX_LUA_LINES} wanted: move what is not UI out")
    return problems


# --- LuaCATS ----------------------------------------------------------------------------

_EXPORTED = re.compile(r"^function\s+M[.:]([\w.:]+)\s*\(([^)]*)\)|^M\.([\w.]+)\s*=\s*function\s*\(([^)]*)\)")
_PARAM = re.compile(r"^---\s*@param\s+([\w.]+\??)")


def annotation_problems(lua: list[Path], root: Path = ROOT) -> list[str]:
    problems = []
    for path in lua:
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            match = _EXPORTED.match(line)
            if not match:
                continue
            name = match.group(1) or match.group(3)
            params = [p.strip() for p in (match.group(2) if match.group(1) else match.group(4)).split(",") if p.strip()]
            documented = []
            row = number - 2
            while row >= 0 and lines[row].startswith("---"):
                param = _PARAM.match(lines[row])
                if param:
                    documented.insert(0, param.group(1).rstrip("?"))
                row -= 1
            if row == number - 2:
                problems.append(f"{path.relative_to(root)}:{number}: M.{name} has no LuaCATS annotation")
            elif documented != params:
                problems.append(
                    f"{path.relative_to(root)}:{number}: M.{name}({', '.join(params)}) is annotated with "
                    f"@param {', '.join(documented) or '(none)'}"
                )
    return problems


def main() -> int:
    py, lua = python_files(), lua_files()
    problems = [*import_problems(py), *size_problems(py, lua), *annotation_problems(lua)]
    for problem in problems:
        print(problem)
    texts = [path.read_text().splitlines() for path in lua]
    code = sum(1 for lines in texts for line in lines if line.strip() and not line.lstrip().startswith("--"))
    print(
        f"structure: {len(py)} Python and {len(lua)} Lua files (Lua: {code} lines of code, "
        f"{sum(map(len, texts))} with comments and blank lines), {len(problems)} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
