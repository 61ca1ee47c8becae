#!/usr/bin/env python3
r"""The false-alarm budget of the nightly, and what it still catches (run by hand).

Reads the unchanged sessions this project captured on its development
machine (``tests/data/nights``: every check family of the quick mode, several
transports of each MPI, spread over hours; each session of the point-to-point,
matching and ring checks measured again right after it, as a retry does) and
replays them night by night through the suite's own decisions: the learnt
baseline of each judged variable and of the host probe
(:func:`sentinel.results.baseline.learn.learn`: window, burn-in, spread,
floor, change points), a test case judged on its headline variables, a
failure measured again before it is called (the retry judges the values that
were outside alone, and its probe waits for a quiet node: the next captured
measurement whose host probe is within its bands, of the next three), named
as the host's when its probe is outside its band in both measurements.
For the defaults, for the defaults without the retry, for the suite as it
was before (every captured variable with a direction judged, a single
measurement) and, with ``--grid``, for other settings of the baseline, it
prints

* per check family: the nights judged, first measurements outside a band,
  failures confirmed by the retry, and how many of them the report named as
  the host's;
* the expected false failures of one unchanged night of the example big site
  (``tests/config/big_site.py``: the measuring test cases of its nightly,
  from a ReFrame dry run, each at its family's rate; a family captured here
  in no session takes the rate of all families), with the 95 % upper bound
  the captured nights allow (Clopper-Pearson: per family, summed; and all
  families pooled);
* the chance that a regression of one transport (every judged value of its
  test cases ``--factors`` worse: 1.25, 2) is named the night it begins, and
  within 3 nights, over every night it could have begun on.

``--write-docs`` puts the table into ``docs/detection.md``.

    .venv/bin/python benchmarks/false_alarms.py [--grid] [--cases DRY_RUN_REPORT] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from scipy.stats import beta

from sentinel.analysis.baseline import Settings
from sentinel.analysis.variables import spec_of
from sentinel.results.verdicts import last_attempts

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the captured nights' reader, run as a script
from tests.cluster import nights  # noqa: E402
from tests.cluster.replay import MOVED, MOVED_BY, Tally, first_night_moved, replay  # noqa: E402

DATA = ROOT / "tests" / "data" / "nights" / "unchanged.json.gz"
DOCS = ROOT / "docs" / "detection.md"
BEGIN, END = "<!-- false_alarms.py: begin -->", "<!-- false_alarms.py: end -->"
#: The settings replayed: (baseline settings, retries, every variable judged). The
#: defaults first; then as the suite was before (every variable with a band, a
#: single measurement); then, with --grid, the others compared.
GRID = [(Settings(), 1, False), (Settings(), 0, False), (Settings(), 0, True),
        *((replace(Settings(), k=k), 1, False) for k in (3.0, 4.0, 5.0, 6.0)
          if k != Settings().k),
        (replace(Settings(), floor=0.10), 1, False), (replace(Settings(), floor=0.15), 1, False),
        (replace(Settings(), floor=0.30), 1, False), (replace(Settings(), window=20), 1, False),
        (replace(Settings(), min_sessions=10), 1, False)]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DATA, help="the captured nights")
    p.add_argument("--cases", type=Path, default=None,
                   help="the run report of a dry run of big_site's nightly (default: run one)")
    p.add_argument("--grid", action="store_true", help="compare the settings of GRID too")
    p.add_argument("--factors", default="1.25,2", help="regressions injected (default 1.25,2)")
    p.add_argument("--write-docs", action="store_true", help="write the table into "
                   "docs/detection.md")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    return p


def _family_tallies(series: list[nights.Series], settings: Settings, retries: int,
                    every: bool, factors: tuple[float, ...], jobs: int) -> dict[str, Tally]:
    n = len(series)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(replay, series, [settings] * n, [retries] * n, [factors] * n,
                             [every] * n))
    out: dict[str, Tally] = defaultdict(Tally)
    for s, t in zip(series, done):
        out[s.check].add(t)
    return dict(out)


# -- the big site ---------------------------------------------------------------------------

def big_site_cases(path: Path | None) -> Counter:
    """The measuring test cases of big_site's nightly, per check (a dry run's report)."""
    if path is None:
        with tempfile.TemporaryDirectory(prefix="sentinel-fa-") as tmp:
            path = Path(tmp) / "dry-run.json"
            subprocess.run([str(Path(sys.executable).parent / "reframe"), "--nocolor",
                            "-C", str(ROOT / "config" / "settings.py"), "-C",
                            str(ROOT / "tests" / "config" / "big_site.py"), "--system",
                            "big_site", "-c", str(ROOT / "checks"), "--mode", "nightly",
                            "--dry-run", "--prefix", tmp, "--report-file", str(path)],
                           capture_output=True, env={**os.environ, "SENTINEL_OUTPUT": tmp},
                           check=False)
            return _measuring(json.loads(path.read_text()))
    return _measuring(json.loads(path.read_text()))


def _measuring(report: dict) -> Counter:
    found: Counter = Counter()
    for tc in last_attempts(report):
        check = tc["name"].split()[0]
        if tc["result"] == "skip" or not re.search(r"Check$", check) \
                or str(tc.get("transport", "")).endswith("-all"):
            continue
        found[check] += 1
    return found


def _family(check: str) -> str:
    """The captured family a big-site check's test cases take their rate from."""
    return re.sub(r"(Source|Spack)Check$", "Check", check)


def _judges(check: str) -> bool:
    """Whether any variable of the check's declaration is judged by default (a headline one)."""
    return any(var.headline is not None for var in spec_of(check).variables)


def _upper(k: int, n: int) -> float:
    """Clopper-Pearson 95 % upper bound of a rate of k in n."""
    return 1.0 if n == 0 else float(beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0


def expected(tallies: dict[str, Tally], site: Counter) -> tuple[float, float, float, list[str]]:
    """False failures of one unchanged big-site night: expected, 95 % bounds, the sums.

    The bounds: each check at its family's rate (summed; a family captured
    in no judged night at all families'), and all families pooled (as if a
    false failure were as likely in every family: far fewer nights bound it).
    """
    pooled = Tally()
    for t in tallies.values():
        pooled.add(t)
    total = bound = 0.0
    lines = []
    for check, count in sorted(site.items()):
        if not _judges(check):
            lines.append(f"{check}: {count} test cases x 0 (its declaration judges nothing "
                         "by default)")
            continue
        t = tallies.get(_family(check))
        taken = t if t is not None and t.nights else pooled
        rate = taken.failed / taken.nights if taken.nights else 0.0
        up = _upper(taken.failed, taken.nights)
        total += count * rate
        bound += count * up
        lines.append(f"{check}: {count} test cases x {rate:.4f} (<= {up:.4f}) "
                     + ("" if taken is t else "(no captured family: all families' rate)"))
    return total, bound, sum(site.values()) * _upper(pooled.failed, pooled.nights), lines


# -- output -------------------------------------------------------------------------------

def _rates(t: Tally, factor: float) -> tuple[str, str]:
    hits = t.named.get(factor, [])
    later = [h[1] for h in hits if h[1] is not None]
    return (f"{100 * sum(h[0] for h in hits) / len(hits):.0f} %" if hits else "-",
            f"{100 * sum(later) / len(later):.0f} %" if later else "-")


def table(tallies: dict[str, Tally], factors: tuple[float, ...]) -> list[str]:
    """A Markdown table: per family, the replay's counts and the regressions named."""
    head = ["family", "test cases", "nights judged", "first outside a band",
            "failures (confirmed)", "named as the host's", "not said (no retry captured)"]
    for f in factors:
        head += [f"x{f:g} named that night", f"x{f:g} within 3 nights"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    pooled = Tally()
    for check, t in sorted(tallies.items()):
        pooled.add(t)
        lines.append(_row(check, t, factors))
    lines.append(_row("all", pooled, factors))
    return lines


def _row(name: str, t: Tally, factors: tuple[float, ...]) -> str:
    cells = [name, str(t.cases), str(t.nights), str(t.out), str(t.failed), str(t.host),
             str(t.unsaid)]
    for f in factors:
        cells += list(_rates(t, f))
    return "| " + " | ".join(cells) + " |"


def _describe(settings: Settings, retries: int, every: bool) -> str:
    return ("every captured variable judged (the suite before), " if every else
            "the headline variables judged, ") + (
        f"window {settings.window}, burn-in {settings.min_sessions} sessions, "
        f"k {settings.k:g}, floor {settings.floor:g}, "
        + ("a failure measured again before it is called" if retries else "no retry"))


def main() -> int:
    """Replay the captured nights under each setting; print the tables and the big site."""
    args = _parser().parse_args()
    factors = tuple(float(f) for f in args.factors.split(","))
    series = nights.captured(args.data)
    site = big_site_cases(args.cases)
    # the captured sessions are minutes apart: the burn-in's hours are not asked of them
    variants = GRID if args.grid else GRID[:3]
    out = []
    for settings, retries, every in variants:
        replayed = replace(settings, min_span_h=0.0)
        tallies = _family_tallies(series, replayed, retries, every, factors, args.jobs)
        total, bound, pooled, sums = expected(tallies, site)
        out += [f"### {_describe(settings, retries, every)}", "",
                *table(tallies, factors), "",
                f"Expected false failures of one unchanged night of the big site "
                f"({sum(site.values())} measuring test cases): **{total:.2f}** "
                f"(95 % upper bound the captured nights allow: {bound:.1f} with each "
                f"family's nights, {pooled:.1f} with all families' pooled)", ""]
        print("\n".join(out[-len(tallies) - 7:]))
        for line in sums:
            print(f"    {line}")
        print(flush=True)
    out += moved_machine(args.data, replace(GRID[0][0], min_span_h=0.0))
    print("\n".join(out[-8:]))
    if args.write_docs:
        _write_docs(out, series, site)
    return 0


# -- a change of machine --------------------------------------------------------------------

def moved_machine(data: Path, settings: Settings) -> list[str]:
    """The first night on the second machine, each test case judged against the first's band."""
    said = first_night_moved(data, settings)
    if said is None:
        return []
    return ["### the same selection on another machine (a change of level)", "",
            f"Test cases judged on the first night after the move (groups "
            f"{', '.join(f'{k} after {v}' for k, v in MOVED.items())}): {said.judged}; of "
            f"them {said.moved} had a judged value {MOVED_BY:g}x worse or more (the "
            f"medians of 5 nights on each machine), and the first night named "
            f"**{said.named_moved}** of those as the MPI's (and {said.host_moved} as the "
            f"host's), and {said.named_2x} of the {said.moved_2x} that moved 2x or more; of "
            f"the {said.judged - said.moved} others it named {said.named_still}.", ""]


def _write_docs(lines: list[str], series: list[nights.Series], site: Counter) -> None:
    text = DOCS.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOCS}: no {BEGIN} ... {END} markers to write between")
    sessions = {m.session for s in series for m in s.nights}
    body = [BEGIN, "", f"Replayed: {len(series)} test cases over {len(sessions)} captured "
            f"nights (`tests/data/nights`); the big site's nightly: {sum(site.values())} "
            "measuring test cases. Regenerated by `benchmarks/false_alarms.py --grid "
            "--write-docs`.", "", *lines, END]
    head, rest = text.split(BEGIN, 1)
    DOCS.write_text(head + "\n".join(body) + rest.split(END, 1)[1])


if __name__ == "__main__":
    sys.exit(main())
