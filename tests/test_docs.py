"""What the README and the docs promise a first-time reader: a README of a few screens
that cites nothing the reader cannot see, links that lead somewhere, figures that name the
`make bench` key they come from, and `make test` naming the reason of every skip."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "doc" / "codecompanion_py.txt"]
BENCH_MARK = re.compile(r"(?<!`)<!-- bench: ([\w.]+) -->(\S*)")  # not the one the text shows


def slug(heading: str) -> str:
    """A Markdown heading's anchor as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return found


def test_the_readme_fits_on_a_few_screens():
    assert len(README.read_text().splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_cites_work_history_or_calls_a_present_feature_missing(page):
    text = page.read_text()
    assert not re.search(r"\bissue \d+|issue \d+'s|earlier instructions", text, re.IGNORECASE)
    assert not re.search(r"not here yet|not yet (here|supported)", text, re.IGNORECASE)


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page):
    links = re.findall(r"\]\(([^)\s]+)\)", page.read_text())
    relative = [link for link in links if not link.startswith(("http://", "https://", "mailto:"))]
    assert relative or page != README
    for link in relative:
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link} leads nowhere"
        if anchor:
            assert anchor in anchors(target), f"{page.name}: {link} names no heading of {target.name}"


def test_every_figure_names_the_bench_key_it_comes_from():
    bench = (ROOT / "bench" / "run.py").read_text()
    readme = BENCH_MARK.findall(README.read_text())
    figures = readme + BENCH_MARK.findall((ROOT / "docs" / "BENCHMARKS.md").read_text())
    assert len(readme) >= 5 and any(key.startswith("cold_start.") for key, _ in readme)
    for key, figure in figures:
        assert figure, f"{key}: no figure after its mark"
        assert f'"{key.split(".")[0]}"' in bench, f"{key}: not a key of make bench's report"


def test_make_test_lists_the_reason_of_every_skip():
    recipe = subprocess.run(
        ["make", "-n", "test", "AGENTS=0"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"-m pytest .*-rs", recipe), recipe


def test_refreshed_figures_keep_their_decimals_and_a_missing_key_keeps_its_figure():
    spec = importlib.util.spec_from_file_location("refresh_figures", ROOT / "scripts" / "refresh_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    refresh = module.refresh
    page = "a <!-- bench: x.y_s -->60 ms, b <!-- bench: x.z -->1.0 ms, c <!-- bench: gone -->7 ms"
    missing: list[str] = []
    text = refresh(page, {"x": {"y_s": 0.0314, "z": 2.345}}, missing)
    assert text == "a <!-- bench: x.y_s -->31 ms, b <!-- bench: x.z -->2.3 ms, c <!-- bench: gone -->7 ms"
    assert missing == ["gone"]
