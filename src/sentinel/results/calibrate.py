"""Per-partition references from repeated runs (``sentinel calibrate``).

Each judged variable of each test (what the test case judged: its check's
headline variables or the site's ``judged`` setting; ``--variables`` chooses
others) and its host probe's figures become ``[median, lower, upper, unit]``
(ReFrame's relative bounds) where, over the logarithms of the runs,

    s     = 1.4826 * MAD(ln v)            (a relative standard deviation)
    lower = -max(floor, 1 - exp(-k * s))  (a rate; a time's lower bound is open: null)
    upper = +max(floor, exp(k * s) - 1)   (a time; a rate's upper bound is open: null)

The better side is open: a faster run is reported, never failed (a variable
with no better direction gets both bounds). A judged variable's band also
holds the worst run but one with a 10 % margin (a level the runs took in
turns); the host probe's does not: its band is the node's quiet state, which
a slowed node leaves (:func:`~sentinel.analysis.baseline.quiet_tolerance`).

MAD is the median absolute deviation; 1.4826 * MAD estimates the standard
deviation of normally distributed noise without being moved by a minority of
outlier runs. Taken on the logarithms, the band is symmetric in ratio (k
standard deviations faster or slower) and its lower bound never reaches 0: a
noisy bandwidth still fails when it collapses, where a linear band of
+/-100 % or more would admit a zero. With the defaults (k = 5, floor = 10 %)
an unchanged system stays inside its band and a halved bandwidth or a
multiplied latency does not.

Only the calibrated partition's subtree of the reference file changes; every
other partition, and every check not in the selection, is kept as it was.
"""

from __future__ import annotations

import difflib
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from sentinel.analysis.baseline import (
    DEFAULT_K,
    MAD_TO_SIGMA,
    MAX_SPREAD,
    quiet_tolerance,
    spread,
    tolerance,
)
from sentinel.analysis.variables import (
    HIGHER,
    HOST_VARIABLES,
    LOWER,
    NEUTRAL,
    all_specs,
    declaration,
)
from sentinel.errors import SentinelError

#: The smallest relative tolerance of a calibrated band (the multiple of the
#: scaled MAD, ``DEFAULT_K``, is the learnt baseline's).
DEFAULT_FLOOR = 0.10
HOST_NAMES = frozenset(v.template for v in HOST_VARIABLES)
__all__ = ["DEFAULT_K", "MAD_TO_SIGMA", "spread"]

HEADER = ("# Per-partition references. Entries of calibrated partitions are written by\n"
          "# 'sentinel calibrate': [median, lower, upper, unit] with s = 1.4826 * MAD of\n"
          "# ln(runs), lower = -max(floor, 1 - exp(-k s)), upper = max(floor, exp(k s) - 1).\n")


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
    #: Why the runs where the value was unresolved (not a measurement) had none.
    unresolved: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Floors:
    """The smallest relative tolerance of each variable.

    ``default`` unless one of ``overrides`` (pattern, floor), tried in order,
    matches the variable as ``--variables`` does: a noisy transport (TCP on a
    shared host) may need a wider floor than shared memory on the same run.
    """

    default: float = DEFAULT_FLOOR
    overrides: tuple[tuple[re.Pattern[str], float], ...] = ()

    def of(self, key: Key) -> float:
        """The floor of ``key``'s band."""
        for pattern, value in self.overrides:
            if _selected(pattern, key):
                return value
        return self.default


def floors(specs: list[str]) -> Floors:
    """``--floor`` values (``0.2`` or ``PATTERN=0.5``) as Floors; SentinelError names a bad one."""
    default, overrides = DEFAULT_FLOOR, []
    for spec in specs:
        pattern, _, text = spec.rpartition("=")
        try:
            value = float(text)
        except ValueError:
            raise SentinelError(f"--floor {spec!r}: expected a number such as 0.2, or "
                                "PATTERN=NUMBER") from None
        if not 0 <= value < 1:
            raise SentinelError(f"--floor {spec!r}: {value:g} is not in [0, 1) (a lower "
                                "bound of -100 % or below would accept a zero)")
        if not pattern:
            default = value
            continue
        try:
            overrides.append((re.compile(pattern), value))
        except re.error as err:
            raise SentinelError(f"--floor {spec!r}: bad regular expression: {err}") from None
    return Floors(default, tuple(overrides))


#: Runs closer together than this sample one stretch of the machine's state,
#: not the nights a band must hold for.
NIGHTS_APART_S = 12 * 3600


def time_span_note(reports: list[tuple[str, dict]]) -> str:
    """Why the runs' bands may not hold over nights ('' when the runs span 12 hours or more).

    A machine drifts over minutes and hours (its other jobs, its clocks, its
    temperature): bands from runs back to back describe one stretch of it,
    and the next night's unchanged run can fall outside them everywhere.
    """
    starts = [t for _, r in reports
              if isinstance(t := (r.get("session_info") or {}).get("time_start_unix"),
                            (int, float))]
    if len(starts) < 2 or max(starts) - min(starts) >= NIGHTS_APART_S:
        return ""
    minutes = (max(starts) - min(starts)) / 60
    return (f"provisional: the {len(starts)} runs span {minutes:.0f} minute(s), not nights: "
            "their bands sample one stretch of this machine, a first look. Written to the "
            "reference file they are the site's word, which no learnt band replaces: for "
            "the nightly, let 'sentinel baseline' learn the bands from its own nights "
            "(remove these entries once it has), or calibrate from the run reports of "
            "several nights (--from-reports reports/run-report-*.json)")


def collect(reports: list[tuple[str, dict]], judged_only: bool = False) -> dict[Key, Series]:
    """Every performance value of the passing tests of the run reports.

    ``reports`` are (file name, parsed JSON) pairs. A failed test in a
    calibration run is an error: references are not taken from a broken system.
    ``judged_only``: only the variables each test case judged and its host
    probe's (``sentinel calibrate``'s default, as the nightly judges).
    """
    series: dict[Key, Series] = {}
    for name, report in reports:
        for run in report.get("runs", []):
            for tc in run.get("testcases", []):
                _add_testcase(name, tc, series)
    if judged_only:
        series = {k: s for k, s in series.items() if _judged(k, reports)}
    return series


def _judged(key: Key, reports: list[tuple[str, dict]]) -> bool:
    """Whether a test case of the runs judged ``key``'s variable (or it is the probe's)."""
    if key.variable in HOST_NAMES:
        return True
    for _, report in reports:
        for run in report.get("runs", []):
            for tc in run.get("testcases", []):
                if tc.get("name", "").split()[0] != key.check or \
                        tc.get("reference_index_values") != "/".join(key.index_values):
                    continue
                judged = tc.get("judged_variables")
                if judged is not None:
                    return key.variable in judged
    spec = all_specs().get(key.check)
    return spec is not None and spec.judged(key.variable)


def _add_testcase(name: str, tc: dict, series: dict[Key, Series]) -> None:
    if tc.get("result") == "fail":
        raise SentinelError(f"{name}: {tc.get('name')} failed during calibration "
                            f"({tc.get('fail_reason')}); fix it or leave it out of the selection")
    perf = tc.get("perfvalues") or {}
    names, values = tc.get("reference_index_names"), tc.get("reference_index_values")
    unresolved = tc.get("unresolved") or {}
    if tc.get("result") != "pass" or not (perf or unresolved):
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
    for var, why in unresolved.items():
        decl = declaration(check, var)
        key = Key(check, tuple(names.split("/")), tuple(values.split("/")), var)
        series.setdefault(key, Series(decl.unit if decl else "", [])).unresolved.append(why)


def band(values: list[float], k: float = DEFAULT_K, floor: float = DEFAULT_FLOOR,
         host: bool = False) -> tuple[float, float]:
    """Relative (lower, upper) bounds from the runs' spread (see the module docstring).

    ``host``: the host probe's, the node's quiet state (:func:`quiet_tolerance`).
    """
    falls, grows = (quiet_tolerance if host else tolerance)(values, k, floor)
    return -falls, grows


def references(series: dict[Key, Series], runs: int, k: float = DEFAULT_K,
               floor: Floors = Floors(),
               variables: str = "") -> tuple[dict[Key, list], list[str]]:
    """Reference entries, and notes on the variables left out (and why).

    ``variables`` (a regular expression) limits the calibration to the
    performance variables whose name, or whose path below the partition
    (``openmpi/ob1-vader/core/bw_1048576B``), it matches in full; ``floor``
    gives each variable its smallest tolerance. A variable
    whose runs cross zero or spread over more than a factor 2 is not
    resolved by these runs (a difference of two nearly equal times, a fit
    quality) and is left out.
    """
    out: dict[Key, list] = {}
    notes = []
    wanted = re.compile(variables) if variables else None
    for key, s in sorted(series.items(), key=lambda kv: str(kv[0])):
        if wanted and not _selected(wanted, key):
            continue
        where = f"{key.check} {'/'.join(key.index_values)} {key.variable}"
        note = _unusable(s, runs)
        if note:
            notes.append(f"{where}: {note}")
            continue
        lower, upper = band(s.values, k, floor.of(key), key.variable in HOST_NAMES)
        if lower < -0.5:
            notes.append(f"{where}: band {100 * lower:+.0f}/{100 * upper:+.0f} % would not "
                         "catch a halving (runs " + _runs(s.values) + "); calibrate again on "
                         "a quiet partition or with more --runs")
        decl = declaration(key.check, key.variable)
        better = decl.better if decl else NEUTRAL
        out[key] = [_round(statistics.median(s.values)),
                    None if better == LOWER else round(lower, 3),
                    None if better == HIGHER else round(upper, 3), s.unit]
    return out, notes


def _selected(wanted: re.Pattern[str], key: Key) -> bool:
    path = "/".join((*key.index_values[1:], key.variable))
    return bool(wanted.fullmatch(key.variable) or wanted.fullmatch(path))


def _unusable(s: Series, runs: int) -> str:
    """Why a variable's runs give no relative band ("" when they do)."""
    if s.unresolved:
        return (f"unresolved in {len(s.unresolved)} of {runs} runs ({s.unresolved[0]}), "
                "not calibrated")
    if len(s.values) != runs:
        return f"in {len(s.values)} of {runs} runs, not calibrated"
    med = statistics.median(s.values)
    if med <= 0:
        return f"median {med:g} <= 0, no relative band, not calibrated"
    if min(s.values) <= 0:
        return (f"runs from {min(s.values):g} to {max(s.values):g} cross 0 around the median "
                f"{med:g}: not a stable quantity, not calibrated")
    if spread(s.values) > MAX_SPREAD:
        return ("runs " + _runs(s.values) + " differ by more than a factor 2 (1.4826 MAD of "
                "ln): not a stable quantity, not calibrated")
    return ""


def _runs(values: list[float]) -> str:
    return " ".join(f"{v:.5g}" for v in values)


def summary(series: dict[Key, Series], refs: dict[Key, list]) -> list[str]:
    """One line per calibrated variable: median, relative spread, band, the runs."""
    lines = []
    for key, entry in refs.items():
        s = series[key]
        decl = declaration(key.check, key.variable)
        better = f" ({decl.better} is better)" if decl and decl.better != NEUTRAL else ""
        lines.append(f"{key.check} {'/'.join(key.index_values)} {key.variable}{better}: median "
                     f"{entry[0]:g} {s.unit}, spread {100 * spread(s.values):.1f} %, "
                     f"band {_side(entry[1])}/{_side(entry[2])} %, "
                     f"runs {_runs(s.values)}")
    return lines


def _side(bound: float | None) -> str:
    """A relative bound in per cent, or ``open`` (the better side)."""
    return "open" if bound is None else f"{100 * bound:+.1f}"


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
