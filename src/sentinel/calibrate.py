"""Per-partition references from repeated runs (``sentinel calibrate``).

Each performance variable of each test becomes ``[median, -tol, +tol, unit]``
(ReFrame's relative bounds; the lower one at most -1, which admits 0) where

    tol = max(floor, k * 1.4826 * MAD / |median|)

MAD is the median absolute deviation of the runs; 1.4826 * MAD estimates the
standard deviation of normally distributed noise without being moved by one
outlier run. With the defaults (k = 5, floor = 10 %) an unchanged system stays
inside its band and a halved bandwidth or a multiplied latency does not.

Only the calibrated partition's subtree of the reference file changes; every
other partition, and every check not in the selection, is kept as it was.
"""

from __future__ import annotations

import difflib
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from sentinel.errors import SentinelError

#: Robust multiple of the scaled MAD, and the smallest relative tolerance.
DEFAULT_K = 5.0
DEFAULT_FLOOR = 0.10
MAD_TO_SIGMA = 1.4826

HEADER = ("# Per-partition references. Entries of calibrated partitions are written by\n"
          "# 'sentinel calibrate': [median, -tol, +tol, unit], tol = max(floor,\n"
          "# k * 1.4826 * MAD / median) over the calibration runs.\n")


@dataclass(frozen=True)
class Key:
    """Where one performance variable of one test lives in the reference file."""

    check: str
    index_names: tuple[str, ...]
    index_values: tuple[str, ...]
    variable: str


@dataclass
class Series:
    """The values one variable took over the calibration runs."""

    unit: str
    values: list[float]


def collect(reports: list[tuple[str, dict]]) -> dict[Key, Series]:
    """Every performance value of the passing tests of the run reports.

    ``reports`` are (file name, parsed JSON) pairs. A failed test in a
    calibration run is an error: references are not taken from a broken system.
    """
    series: dict[Key, Series] = {}
    for name, report in reports:
        for run in report.get("runs", []):
            for tc in run.get("testcases", []):
                _add_testcase(name, tc, series)
    return series


def _add_testcase(name: str, tc: dict, series: dict[Key, Series]) -> None:
    if tc.get("result") == "fail":
        raise SentinelError(f"{name}: {tc.get('name')} failed during calibration "
                            f"({tc.get('fail_reason')}); fix it or leave it out of the selection")
    perf = tc.get("perfvalues") or {}
    names, values = tc.get("reference_index_names"), tc.get("reference_index_values")
    if tc.get("result") != "pass" or not perf:
        return
    if not names or not values:
        raise SentinelError(f"{name}: {tc.get('name')} has performance values but no "
                            "reference index (not a PartitionReferences check?)")
    check = tc["name"].split()[0]
    for full, entry in perf.items():
        var = full.rsplit(":", 1)[-1]
        value, unit = entry[0], entry[4]
        if value is None:
            continue
        key = Key(check, tuple(names.split("/")), tuple(values.split("/")), var)
        series.setdefault(key, Series(unit, [])).values.append(float(value))


def tolerance(values: list[float], k: float = DEFAULT_K, floor: float = DEFAULT_FLOOR) -> float:
    """Relative tolerance from the runs' spread (see the module docstring)."""
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    return max(floor, k * MAD_TO_SIGMA * mad / abs(med))


def references(series: dict[Key, Series], runs: int, k: float = DEFAULT_K,
               floor: float = DEFAULT_FLOOR,
               variables: str = "") -> tuple[dict[Key, list], list[str]]:
    """Reference entries, and notes on the variables left out (and why).

    ``variables`` (a regular expression, full match) limits the calibration
    to those performance variables. A variable whose scaled MAD exceeds its
    median is not resolved from zero by these runs (a difference of two
    nearly equal times, a fit quality) and is left out.
    """
    out: dict[Key, list] = {}
    notes = []
    wanted = re.compile(variables) if variables else None
    for key, s in sorted(series.items(), key=lambda kv: str(kv[0])):
        if wanted and not wanted.fullmatch(key.variable):
            continue
        where = f"{key.check} {'/'.join(key.index_values)} {key.variable}"
        if len(s.values) != runs:
            notes.append(f"{where}: in {len(s.values)} of {runs} runs, not calibrated")
            continue
        med = statistics.median(s.values)
        if med <= 0:
            notes.append(f"{where}: median {med:g} <= 0, no relative band, not calibrated")
            continue
        tol = tolerance(s.values, k, floor)
        mad = statistics.median(abs(v - med) for v in s.values)
        if MAD_TO_SIGMA * mad > med:
            notes.append(f"{where}: spread (1.4826 MAD) above the median {med:g}: "
                         "not a stable quantity, not calibrated")
            continue
        if tol >= 1.0:
            notes.append(f"{where}: band +/-{100 * tol:.0f} % admits 0, so it cannot catch a "
                         "drop (runs " + " ".join(f"{v:.5g}" for v in s.values) + "); "
                         "calibrate again on a quiet partition or with more --runs")
        # ReFrame takes relative lower bounds in [-1, 0]: -1 already admits 0.
        out[key] = [_round(med), -min(round(tol, 3), 1.0), round(tol, 3), s.unit]
    return out, notes


def summary(series: dict[Key, Series], refs: dict[Key, list]) -> list[str]:
    """One line per calibrated variable: median, relative scaled MAD, band, the runs."""
    lines = []
    for key, entry in refs.items():
        s = series[key]
        med = statistics.median(s.values)
        mad = statistics.median(abs(v - med) for v in s.values)
        runs = " ".join(f"{v:.5g}" for v in s.values)
        lines.append(f"{key.check} {'/'.join(key.index_values)} {key.variable}: median "
                     f"{entry[0]:g} {s.unit}, 1.4826 MAD {100 * MAD_TO_SIGMA * mad / med:.1f} %, "
                     f"band +/-{100 * entry[2]:.1f} %, runs {runs}")
    return lines


def _round(x: float) -> float:
    return float(f"{x:.5g}")


def merge(existing: dict, refs: dict[Key, list], partition: str) -> dict:
    """``existing`` with ``partition``'s entries of the calibrated checks replaced."""
    data = {name: dict(body) for name, body in (existing or {}).items()}
    by_check: dict[str, dict[Key, list]] = defaultdict(dict)
    for key, entry in refs.items():
        if key.index_values[0] != partition:
            raise SentinelError(f"{key.check} ran on {key.index_values[0]}, not on the "
                                f"calibrated partition {partition}")
        by_check[key.check][key] = entry
    for check, entries in by_check.items():
        names = list(next(iter(entries)).index_names)
        body = data.setdefault(check, {"$index": names})
        if body.get("$index") != names:
            raise SentinelError(f"{check}: the reference file's $index {body.get('$index')} "
                                f"is not the check's {names}")
        body.pop(partition, None)  # the partition's old entries go; the others stay
        for key, entry in entries.items():
            node = body
            for value in key.index_values:
                # ReFrame looks numeric parameters (threads) up as numbers.
                node = node.setdefault(int(value) if value.isdigit() else value, {})
            node[key.variable] = entry
    return data


def load(path: Path) -> dict:
    """A reference file's content ({} when it does not exist yet)."""
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise SentinelError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise SentinelError(f"{path}: expected a mapping of check names at the top level")
    return data


def render(data: dict) -> str:
    """The reference file's text."""
    return HEADER + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)


def diff(path: Path, old: str, new: str) -> str:
    """A unified diff of the reference file's change."""
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        fromfile=f"{path} (before)", tofile=f"{path} (after)"))
