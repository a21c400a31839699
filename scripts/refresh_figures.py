"""Write the latest `make bench` figures into the pages that quote them.

Each quoted figure follows a mark naming its key in bench/results/latest.json:
`<!-- bench: cold_start.ours_after_1s_idle -->35 ms`. The number after the mark is replaced
by the key's value, in the number of decimals the page already shows; keys ending in `_s`
are seconds and are shown in milliseconds. A key the results lack is reported and its
figure left as it is, so a partial bench run never blanks a page.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", ROOT / "docs" / "BENCHMARKS.md")
MARKED = re.compile(r"(?<!`)(<!-- bench: ([\w.]+) -->)(\d[\d,]*(?:\.\d+)?)")


def lookup(results: dict, key: str) -> float | None:
    value: object = results
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return value * 1000 if key.endswith("_s") else float(value)


def shown(value: float, like: str) -> str:
    """`value` with as many decimals as `like`, the figure it replaces."""
    decimals = len(like.split(".")[1]) if "." in like else 0
    text = f"{value:,.{decimals}f}"
    return text if "," in like else text.replace(",", "")


def refresh(text: str, results: dict, missing: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        value = lookup(results, match.group(2))
        if value is None:
            missing.append(match.group(2))
            return match.group(0)
        return match.group(1) + shown(value, match.group(3))

    return MARKED.sub(replace, text)


def main() -> int:
    source = ROOT / "bench" / "results" / "latest.json"
    if not source.exists():
        print(f"{source} is missing: run `make bench` first", file=sys.stderr)
        return 1
    results = json.loads(source.read_text())
    missing: list[str] = []
    for page in PAGES:
        page.write_text(refresh(page.read_text(), results, missing))
    for key in sorted(set(missing)):
        print(f"not in the latest results, left as it was: {key}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
