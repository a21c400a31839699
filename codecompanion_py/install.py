"""Installs the Python engine for build.lua: a venv at <plugin root>/.venv with the plugin
pip-installed into it (editable, so the engine's code is always the checkout's).

build.lua runs this file by path (`python3 -I codecompanion_py/install.py <root>`) with the base
Python, before the package is installed: so it uses the standard library only and imports nothing
of codecompanion_py. It reports on stdout one JSON object a line, `{"msg": ..., "level": ...}`,
the level named as in vim.log.levels: INFO before each step, TRACE for each line the tools print,
and last the message for the user with `"ok"`: whether the engine is installed. build.lua relays
them to Neovim; all the deciding is here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: an older Python must get as far as saying it is too old
    from collections.abc import Callable, Sequence

    Emit = Callable[[str, str], None]
    """Reports a line: its level ("INFO" for a step, "TRACE" for a tool's output), then the text."""

MIN_PYTHON = (3, 10)  # pyproject.toml's requires-python
TAIL = 25  # lines of a failing tool's output quoted in the failure message
TOOL_ENV = {"PYTHONUNBUFFERED": "1", "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
IMPORT_CHECK = "import codecompanion_py.nvim.host"


def emit_json(level: str, msg: str, ok: bool | None = None) -> None:
    line: dict[str, object] = {"msg": msg, "level": level}
    if ok is not None:
        line["ok"] = ok
    print(json.dumps(line), flush=True)


@dataclass(frozen=True)
class Ran:
    """How a tool ended: whether it succeeded, and the last lines it printed."""

    ok: bool
    tail: list[str] = field(default_factory=list)


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


@dataclass
class Installer:
    root: Path
    emit: Emit = emit_json
    version: tuple[int, int] = (sys.version_info[0], sys.version_info[1])

    @property
    def venv(self) -> Path:
        return self.root / ".venv"

    @property
    def python(self) -> Path:
        return venv_python(self.venv)

    def run(self, cmd: Sequence[str]) -> Ran:
        """Runs a tool to its end in the plugin's directory, emitting each line it prints
        (stdout and stderr merged; pip's carriage returns count as line ends)."""
        tail: deque[str] = deque(maxlen=TAIL)
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=self.root,
                env={**os.environ, **TOOL_ENV},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
            )
        except OSError as exc:
            return Ran(False, [str(exc)])
        with proc:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.rstrip()
                if line:
                    tail.append(line)
                    self.emit("TRACE", line)
        return Ran(proc.returncode == 0, list(tail))

    def venv_works(self) -> bool:
        # A venv that is there but has no pip (one that `python3 -m venv` left half made, as
        # Debian's python3 does without python3-venv) is made anew, like a missing one.
        return (
            self.python.is_file()
            and os.access(self.python, os.X_OK)
            and self.run([str(self.python), "-m", "pip", "--version"]).ok
        )

    def make_venv(self) -> str | None:
        """Makes the venv with this Python; returns why it could not."""
        if self.version < MIN_PYTHON:
            need = ".".join(map(str, MIN_PYTHON))
            return (
                f"{sys.executable} is Python {self.version[0]}.{self.version[1]}: install Python {need} or newer"
                " (or set vim.g.codecompanion_py_build_python)"
            )
        self.emit("INFO", f"creating {self.venv} with {sys.executable}")
        # --clear: a venv whose Python is gone (a removed or upgraded interpreter) is made anew
        clear = ["--clear"] if self.venv.is_dir() else []
        made = self.run([sys.executable, "-m", "venv", *clear, str(self.venv)])
        return None if made.ok else f"could not create {self.venv}:\n" + "\n".join(made.tail)

    def install(self) -> tuple[bool, str]:
        """Makes the venv if it does not work, installs the engine into it and checks that it
        imports; returns whether it did and the message for the user."""
        started = time.monotonic()
        if not self.venv_works():
            why = self.make_venv()
            if why:
                return False, why
        self.emit("INFO", f"installing the engine and its dependencies into {self.venv}")
        pip = self.run([str(self.python), "-m", "pip", "install", "--editable", str(self.root)])
        if not pip.ok:
            tail = "\n".join(pip.tail)
            return False, f"pip could not install the engine:\n{tail}\n(a broken venv can be removed: {self.venv})"
        imported = self.run([str(self.python), "-c", IMPORT_CHECK])
        if not imported.ok:
            return False, "the engine does not import:\n" + "\n".join(imported.tail)
        seconds = time.monotonic() - started
        return True, f"the Python engine is installed ({seconds:.1f} s); commands use it from now on"


def main(argv: Sequence[str] = sys.argv[1:]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    try:
        ok, message = Installer(root).install()
    except Exception as exc:  # the last line must say how it ended, whatever happened
        ok, message = False, f"the installer failed: {exc!r}"
    emit_json("INFO" if ok else "ERROR", message, ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
