"""13. What the sandbox adds to starting a command: `true` run 50 times each way, as
run_command runs it (`Sandbox.launch`, then `run_process`: the paths resolved, the
listening sockets read, the command started, its output read to its end), interleaved so
drift hits every way alike. Unsandboxed, under bubblewrap, and under Landlock; a mechanism
this machine lacks is skipped and said. It runs in a Python process of its own, the size of
the engine's: a child is forked from its parent, and a bench process grown by the other
sections would make every way slower than a user's engine is.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 50
WAYS = {"unsandboxed": "off", "bubblewrap": "bubblewrap", "landlock": "landlock"}


async def _runs(root: Path) -> dict[str, list[float]]:
    from codecompanion_py.processes.run import run_process
    from codecompanion_py.sandbox import Sandbox, SandboxPolicy, available
    from codecompanion_py.tools.workspace import Workspace

    workspace = Workspace(root)
    boxes = {}
    for way, mechanism in WAYS.items():
        if mechanism == "off":
            policy = SandboxPolicy(enabled=False)
        elif available(mechanism).name == mechanism:
            policy = SandboxPolicy(mechanism=mechanism)  # type: ignore[arg-type]
        else:
            continue
        boxes[way] = Sandbox(policy, root=str(root), readonly=workspace.code_running_paths)
    times: dict[str, list[float]] = {way: [] for way in boxes}
    env = {"PATH": os.environ.get("PATH", "")}
    for _ in range(RUNS + 2):  # the first two of each warm up
        for way, box in boxes.items():
            start = time.perf_counter()
            launch = await box.launch(["true"], cwd=str(root), env=env)
            result = await run_process(launch.argv, cwd=root, timeout=30, env=launch.env, preexec=launch.preexec)
            times[way].append(time.perf_counter() - start)
            assert result.ok, result.output
    return {way: spent[2:] for way, spent in times.items()}


def bench_sandbox() -> dict:
    """The figures, measured in a fresh Python (see the module's docstring)."""
    done = subprocess.run(
        [sys.executable, __file__, "--json"], capture_output=True, text=True, check=True, cwd=Path(__file__).parent
    )
    return json.loads(done.stdout)


def _measure() -> dict:
    from codecompanion_py.sandbox import available

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "project"
        (root / ".git" / "hooks").mkdir(parents=True)
        times = asyncio.run(_runs(root))
    report: dict = {"runs": RUNS, "python": sys.version.split()[0]}
    for way, spent in times.items():
        report[f"{way}_median_ms"] = statistics.median(spent) * 1000
        report[f"{way}_p90_ms"] = sorted(spent)[int(len(spent) * 0.9)] * 1000
    for way in ("bubblewrap", "landlock"):
        if f"{way}_median_ms" in report:
            report[f"{way}_extra_ms"] = report[f"{way}_median_ms"] - report["unsandboxed_median_ms"]
        else:
            report[f"{way}_missing"] = available(way).reason
    return report


def report_lines(report: dict) -> list[str]:
    lines = [
        f"(13) starting `true` as run_command does, median of {report['runs']}: unsandboxed "
        f"{report['unsandboxed_median_ms']:.1f} ms (p90 {report['unsandboxed_p90_ms']:.1f})"
    ]
    for way in ("bubblewrap", "landlock"):
        if f"{way}_extra_ms" in report:
            lines.append(
                f"     {way} {report[f'{way}_median_ms']:.1f} ms (p90 {report[f'{way}_p90_ms']:.1f}): "
                f"{report[f'{way}_extra_ms']:+.1f} ms"
            )
        else:
            lines.append(f"     {way}: not measured ({report[f'{way}_missing']})")
    return lines


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    measured = _measure()
    print(json.dumps(measured) if "--json" in sys.argv else "\n".join(report_lines(measured)))
