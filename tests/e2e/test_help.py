"""The manual as a user without lazy.nvim meets it: the checkout on 'runtimepath', nothing
running :helptags, so `doc/tags` must be committed and current."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from codecompanion_py.demo.launch import nvim_binary

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "doc"

pytestmark = pytest.mark.nvim


def nvim(*args: str) -> subprocess.CompletedProcess[str]:
    # --clean: no user config, no plugins of the machine's user on 'runtimepath'
    return subprocess.run(
        [nvim_binary(), "--clean", "--headless", *args, "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def helptags(doc_dir: Path) -> str:
    nvim("-c", f"helptags {doc_dir}")
    return (doc_dir / "tags").read_text()


def open_help(tag: str, *rtp: Path) -> tuple[str, str, str]:
    """The file `:help tag` opens, the line it lands on, and the error it gave."""
    report = 'lua io.stdout:write(vim.json.encode({vim.fn.expand("%:t"), vim.fn.getline("."), vim.v.errmsg}))'
    out = nvim("--cmd", "set rtp^=" + ",".join(str(p) for p in rtp), "-c", f"silent! help {tag}", "-c", report)
    name, line, error = json.loads(out.stdout)
    return name, line, error


def test_doc_tags_is_up_to_date(tmp_path):
    copy = tmp_path / "doc"
    copy.mkdir()
    for text in DOC.glob("*.txt"):
        shutil.copy(text, copy / text.name)
    assert (DOC / "tags").exists(), "doc/tags is missing: run `nvim --headless -u NONE -c 'helptags doc' -c q`"
    assert helptags(copy) == (DOC / "tags").read_text(), (
        "doc/tags is out of date: run `.venv/bin/nvim --headless -u NONE -c 'helptags doc' -c q` and commit it"
    )


@pytest.mark.parametrize("tag", ["codecompanion", "codecompanion_py", "codecompanion_py-python-tool"])
def test_help_opens_the_manual_with_the_checkout_on_the_runtimepath(tag):
    name, line, error = open_help(tag, ROOT)
    assert not error, error
    assert name == "codecompanion_py.txt"
    assert f"*{tag}*" in line


def _codecompanion_nvim(root: Path, *, bare_tag: bool) -> Path:
    """A stand-in for CodeCompanion.nvim's manual: `codecompanion.txt` with its own tags."""
    doc = root / "doc"
    doc.mkdir(parents=True)
    extra = "  *codecompanion*\n" if bare_tag else ""
    (doc / "codecompanion.txt").write_text(
        f"*codecompanion.txt*  CodeCompanion\n{extra}\n1. Welcome    *codecompanion-welcome*\n"
    )
    helptags(doc)
    return root


def test_side_by_side_with_codecompanion_nvim(tmp_path):
    # CodeCompanion.nvim's tags are codecompanion.txt and codecompanion-...: no collision,
    # whichever comes first on the runtimepath
    other = _codecompanion_nvim(tmp_path / "cc", bare_tag=False)
    for rtp in ((ROOT, other), (other, ROOT)):
        assert open_help("codecompanion", *rtp)[0] == "codecompanion_py.txt"
        assert open_help("codecompanion_py", *rtp)[0] == "codecompanion_py.txt"
        assert open_help("codecompanion.txt", *rtp)[0] == "codecompanion.txt"


def test_if_both_define_the_bare_tag_the_runtimepath_decides_without_an_error(tmp_path):
    other = _codecompanion_nvim(tmp_path / "cc", bare_tag=True)
    assert open_help("codecompanion", ROOT, other)[:3:2] == ("codecompanion_py.txt", "")
    assert open_help("codecompanion", other, ROOT)[:3:2] == ("codecompanion.txt", "")
    assert open_help("codecompanion_py", other, ROOT)[0] == "codecompanion_py.txt"
