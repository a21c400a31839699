"""The engine's installer (codecompanion_py/install.py) step by step, with its tools scripted:
which commands it runs for a missing, broken or working venv, and what it reports when one fails.
tests/e2e/test_install.py runs it for real, through build.lua."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codecompanion_py import install
from codecompanion_py.install import Installer, Ran

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "codecompanion_py" / "install.py"


class Scripted(Installer):
    """An installer whose tools are not run: each command is recorded and answered by the first
    scripted result whose key is in it (else a success)."""

    def __init__(self, root: Path, results: dict[str, Ran] | None = None, version: tuple[int, int] = (3, 12)):
        self.emitted: list[tuple[str, str]] = []
        super().__init__(root, lambda level, msg: self.emitted.append((level, msg)), version)
        self.results = results or {}
        self.commands: list[list[str]] = []

    def run(self, cmd):
        self.commands.append(list(cmd))
        joined = " ".join(cmd)
        return next((ran for key, ran in self.results.items() if key in joined), Ran(True))

    def steps(self) -> list[str]:
        return [msg for level, msg in self.emitted if level == "INFO"]


def make_venv_python(root: Path) -> Path:
    python = install.venv_python(root / ".venv")
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    return python


def install_commands(root: Path) -> list[list[str]]:
    python = str(install.venv_python(root / ".venv"))
    return [
        [python, "-m", "pip", "install", "--editable", str(root)],
        [python, "-c", "import codecompanion_py.nvim.host"],
    ]


def test_a_working_venv_is_kept_and_the_engine_installed_into_it(tmp_path):
    python = make_venv_python(tmp_path)
    installer = Scripted(tmp_path)
    ok, message = installer.install()
    assert ok, message
    assert message.startswith("the Python engine is installed (") and "commands use it from now on" in message
    assert installer.commands == [[str(python), "-m", "pip", "--version"], *install_commands(tmp_path)]
    assert installer.steps() == [f"installing the engine and its dependencies into {tmp_path / '.venv'}"]


def test_a_missing_venv_is_made_with_the_running_python(tmp_path):
    installer = Scripted(tmp_path)
    ok, _ = installer.install()
    assert ok
    assert installer.commands == [[sys.executable, "-m", "venv", str(tmp_path / ".venv")], *install_commands(tmp_path)]
    assert installer.steps()[0] == f"creating {tmp_path / '.venv'} with {sys.executable}"


def test_a_venv_without_its_python_is_made_anew(tmp_path):
    (tmp_path / ".venv").mkdir()
    installer = Scripted(tmp_path)
    assert installer.install()[0]
    assert installer.commands[0] == [sys.executable, "-m", "venv", "--clear", str(tmp_path / ".venv")]


def test_a_venv_without_pip_is_made_anew(tmp_path):
    make_venv_python(tmp_path)
    installer = Scripted(tmp_path, {"pip --version": Ran(False, ["No module named pip"])})
    assert installer.install()[0]
    assert [cmd[1:3] for cmd in installer.commands[:2]] == [["-m", "pip"], ["-m", "venv"]]
    assert "--clear" in installer.commands[1]


def test_a_python_too_old_makes_no_venv(tmp_path):
    installer = Scripted(tmp_path, version=(3, 9))
    ok, message = installer.install()
    assert not ok
    assert "is Python 3.9: install Python 3.10 or newer" in message
    assert "vim.g.codecompanion_py_build_python" in message
    assert installer.commands == []


def test_a_python_too_old_still_installs_into_a_working_venv(tmp_path):
    make_venv_python(tmp_path)
    assert Scripted(tmp_path, version=(3, 9)).install()[0]


def test_the_minimum_python_is_the_packages():
    required = re.search(r'^requires-python = ">=([\d.]+)"$', (REPO / "pyproject.toml").read_text(), re.M)
    assert required and required[1] == ".".join(map(str, install.MIN_PYTHON))


@pytest.mark.parametrize(
    ("failing", "expected"),
    [
        ("-m venv", "could not create {venv}:\nError: no space\nleft"),
        (
            "pip install",
            "pip could not install the engine:\nError: no space\nleft\n(a broken venv can be removed: {venv})",
        ),
        ("-c import", "the engine does not import:\nError: no space\nleft"),
    ],
)
def test_a_failing_step_ends_the_install_quoting_its_output(tmp_path, failing, expected):
    installer = Scripted(tmp_path, {failing: Ran(False, ["Error: no space", "left"])})
    ok, message = installer.install()
    assert not ok
    assert message == expected.format(venv=tmp_path / ".venv")
    assert failing in " ".join(installer.commands[-1])  # nothing runs after the failure


def test_run_relays_each_line_and_keeps_the_last_ones(tmp_path):
    emitted: list[tuple[str, str]] = []
    installer = Installer(tmp_path, lambda level, msg: emitted.append((level, msg)))
    code = "import sys\nfor i in range(30): print(i)\nsys.stdout.write('a\\rb\\n'); sys.stderr.write('oops\\n'); sys.exit(3)"
    ran = installer.run([sys.executable, "-c", code])
    lines = [*map(str, range(30)), "a", "b", "oops"]
    assert emitted == [("TRACE", line) for line in lines]
    assert ran == Ran(False, lines[-install.TAIL :])
    assert installer.run([sys.executable, "-c", "pass"]) == Ran(True, [])


def test_run_reports_a_tool_that_cannot_start(tmp_path):
    ran = Installer(tmp_path, lambda level, msg: None).run([str(tmp_path / "missing")])
    assert not ran.ok and ran.tail and "missing" in ran.tail[0]


def test_main_ends_with_a_result_line_even_when_the_installer_breaks(tmp_path, monkeypatch, capsys):
    def broken(self):
        raise RuntimeError("a bug")

    monkeypatch.setattr(Installer, "install", broken)
    assert install.main([str(tmp_path)]) == 1
    last = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert last == {"msg": "the installer failed: RuntimeError('a bug')", "level": "ERROR", "ok": False}


def test_run_by_path_it_reports_one_json_object_a_line(tmp_path):
    """As build.lua runs it: by path, isolated (-I), before the package is installed; here a root
    where no venv can be made, so that it fails fast."""
    root = tmp_path / "not-a-directory"
    root.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-I", str(SCRIPT), str(root)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0] == {"msg": f"creating {root / '.venv'} with {sys.executable}", "level": "INFO"}
    assert all(line["level"] == "TRACE" and "ok" not in line for line in lines[1:-1])
    assert lines[-1]["ok"] is False and lines[-1]["level"] == "ERROR"
    assert lines[-1]["msg"].startswith(f"could not create {root / '.venv'}:\n")


def an_older_python() -> str | None:
    on_path = [shutil.which(name) for name in ("python3.9", "python3.8", "python3.7")]
    pyenv = sorted(map(str, Path.home().glob(".pyenv/versions/3.[789].*/bin/python")), reverse=True)
    for path in filter(None, [*on_path, *pyenv]):
        if subprocess.run([path, "-c", "pass"], capture_output=True, timeout=30).returncode == 0:
            return path
    return None


def test_run_by_an_older_python_it_says_so(tmp_path):
    """The installer gets as far as saying the Python is too old: it must parse and import there."""
    python = an_older_python()
    if not python:
        pytest.skip("no Python older than 3.10 here")
    out = subprocess.run([python, "-I", str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    last = json.loads(out.stdout.splitlines()[-1])
    assert last["ok"] is False and "install Python 3.10 or newer" in last["msg"]
    assert not (tmp_path / ".venv").exists()
