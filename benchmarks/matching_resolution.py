#!/usr/bin/env python3
r"""Whether the matching benchmark resolves M, run after run (run by hand).

Runs MatchingCheck ``--runs`` times with the nightly mode's parameters (core
mapping, every transport of the local system, results in a temporary
directory) and prints per transport: how many runs resolved the tag
algorithm's M of the ping-pong pattern, its median and range, the R^2 of
its fit (smallest and median) and the queue models inferred (with how many
runs gave each). ``--rejudge DIR`` judges kept runs again with the current
analysis, running nothing.

    .venv/bin/python benchmarks/matching_resolution.py --runs 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from sentinel.analysis import matching
from sentinel.parsers.sentinel_output import parse

ROOT = Path(__file__).resolve().parents[1]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=10, help="nightly-parameter runs (default 10)")
    p.add_argument("--name", default="^MatchingCheck.*mapping=core",
                   help="reframe -n selection (default: every transport, core mapping)")
    p.add_argument("--mode", default="nightly", help="reframe mode (default nightly)")
    p.add_argument("--out", type=Path, default=None,
                   help="keep the runs (stage directories, reports) here (default: a "
                        "temporary directory)")
    p.add_argument("--rejudge", type=Path, default=None, metavar="DIR",
                   help="run nothing: judge the runs kept under DIR (--out of an earlier "
                        "call) again with the current analysis")
    return p


def _rejudge(tc: dict) -> dict:
    """The test case with its matching values and models from its kept output, re-analysed."""
    out = parse((Path(tc["stagedir"]) / "rfm_job.out").read_text(), "matching")
    result = matching.analyse(out, tc["checkpoint"], tc["lengths"][0] * 8)
    prefix = f"{tc['system']}:{tc['partition']}:"
    tc = dict(tc, queue_model=result.queue_model, unresolved=result.values.unresolved)
    tc["perfvalues"] = {f"{prefix}{name}": [value, None, None, None, unit, "pass"]
                        for name, (value, unit) in result.values.items()}
    return tc


def _kept(root: Path) -> list[dict]:
    """The MatchingCheck test cases of every run kept under ``root``."""
    cases = []
    for report in sorted(root.glob("run-*/reports/run-report-*.json")):
        for run in json.loads(report.read_text())["runs"]:
            cases += [tc for tc in run["testcases"] if tc["name"].startswith("MatchingCheck")
                      and tc["result"] == "pass" and tc.get("queue_evidence")]
    return cases


def _run(out: Path, args: argparse.Namespace) -> list[dict]:
    """One session; the test cases of its run report (last attempts)."""
    env = {**os.environ, "SENTINEL_OUTPUT": str(out)}
    if os.geteuid() == 0:  # a test environment: never in a site config
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out.mkdir(parents=True)
    subprocess.run([str(Path(sys.executable).parent / "reframe"),
                    "-C", str(ROOT / "config" / "settings.py"),
                    "-c", str(ROOT / "checks" / "matching.py"),
                    "--mode", args.mode, "-n", args.name, "--system", "local:cpu",
                    "--keep-stage-files", "-r"],
                   capture_output=True, text=True, env=env, cwd=out, timeout=3600)
    reports = sorted((out / "reports").glob("run-report-*.json"))
    if not reports:
        raise SystemExit(f"matching_resolution: reframe wrote no run report under {out}")
    report = json.loads(reports[-1].read_text())
    last: dict[str, dict] = {}
    for run in report["runs"]:
        for tc in run["testcases"]:
            last[tc["unique_name"]] = tc
    return [tc for tc in last.values() if tc["name"].startswith("MatchingCheck")]


def _summary(cases: list[dict]) -> list[str]:
    by: dict[str, list[dict]] = defaultdict(list)
    for tc in cases:
        by[f"{tc['environ']}/{tc['transport']}"].append(tc)
    lines = [f"{'transport':22} {'runs':>4} {'M resolved':>10} {'M tag (ns)':>22} "
             f"{'R^2 min/median':>15}  queue models (runs)"]
    for name, tcs in sorted(by.items()):
        passed = [tc for tc in tcs if tc["result"] == "pass"]
        values = [tc["perfvalues"]["local:cpu:match_time_tag"][0] for tc in passed
                  if "local:cpu:match_time_tag" in tc["perfvalues"]]
        r2 = [tc["perfvalues"]["local:cpu:match_r2_tag"][0] for tc in passed
              if "local:cpu:match_r2_tag" in tc["perfvalues"]]
        models = Counter(tc.get("queue_model") or "?" for tc in passed)
        span = f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})" \
            if values else "unresolved"
        fit = f"{min(r2):.3f}/{statistics.median(r2):.3f}" if r2 else "-"
        lines.append(f"{name:22} {len(tcs):>4} {len(values):>4} of {len(passed):<3} {span:>22} "
                     f"{fit:>15}  "
                     + "; ".join(f"{m} ({n})" for m, n in models.most_common()))
        bounds = Counter(tc.get("unresolved", {}).get("match_time_tag", "").split(":")[0]
                         for tc in passed if "local:cpu:match_time_tag" not in tc["perfvalues"])
        lines += [f"{'':27}unresolved: {b} ({n})" for b, n in bounds.most_common(3) if b]
    return lines


def main() -> int:
    """Run the check repeatedly and print the table."""
    args = _parser().parse_args()
    if args.rejudge:
        print("\n".join(_summary([_rejudge(tc) for tc in _kept(args.rejudge)])))
        return 0
    cases = []
    with tempfile.TemporaryDirectory(prefix="sentinel-matching-") as tmp:
        for i in range(args.runs):
            cases += _run((args.out or Path(tmp)) / f"run-{i}", args)
            print(f"run {i + 1}/{args.runs} done", file=sys.stderr, flush=True)
    print("\n".join(_summary(cases)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
