"""The upgrade verdict: what changes if a site makes another MPI installation its default.

Two environments of one partition (``openmpi`` and ``openmpi-5_0``), the
sessions of the results history that ran both: each test case of the old
one is paired with the new one's of the same check, transport and mapping
(Open MPI 5 renamed its shared-memory BTL ``vader`` to ``sm``: those pair),
and each verdict variable (the variables whose band can fail a test case)
gives one ratio per session. Ratios are taken within a session, so that a
slow night slows both sides alike.

Per variable: the median ratio over the sessions with its distribution-free
95 % interval (order statistics, ``sentinel.analysis.fits.median_interval``),
turned into a goodness (new over old where higher is better, old over new
where lower is), so that above 1 is always better:

* ``worse``: the whole interval below ``1 - tolerance``;
* ``better``: the whole interval above ``1 + tolerance``;
* ``no worse``: the interval's low end at ``1 - tolerance`` or above;
* ``unresolved``: the interval reaches below ``1 - tolerance`` without
  lying wholly there, or fewer than :data:`MIN_SESSIONS` sessions: said
  with the bound the data allow.

Per transport one line: ``worse`` naming each variable worse, else
``unresolved`` naming those, else ``better`` naming those, else ``no worse
within`` the tolerance.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from sentinel.analysis.fits import median_coverage, median_interval
from sentinel.analysis.variables import HIGHER, LOWER
from sentinel.errors import SentinelError
from sentinel.mpi.transports import current_name
from sentinel.results.report.load import Case

#: Fewer paired sessions than this give no interval a verdict can rest on
#: (6 values: the range covers the median with probability 96.9 %).
MIN_SESSIONS = 6
#: The default tolerance: a change smaller than 5 % is no change to a site.
TOLERANCE = 0.05


@dataclass(frozen=True)
class Ratio:
    """One verdict variable of one paired test: the goodness ratio over the sessions."""

    variable: str
    unit: str
    better: str        # higher or lower
    samples: tuple[float, ...]  # new / old, one per session
    median: float      # goodness: above 1 is better
    low: float
    high: float
    verdict: str       # worse, better, no worse, unresolved

    def describe(self) -> str:
        """``latency_8B 0.83 [0.80, 0.86]``: the goodness ratio and its interval."""
        return f"{self.variable} {self.median:.3g} [{self.low:.3g}, {self.high:.3g}]"


@dataclass
class Pair:
    """One test of the old environment and its counterpart of the new one."""

    check: str
    transport: str     # the old environment's transport name
    mapping: str
    test: str          # the old environment's display name
    sessions: int = 0
    ratios: list[Ratio] = field(default_factory=list)

    def verdict(self) -> str:
        """The pair's verdict: worse, unresolved or better where a variable is, else no worse."""
        words = {r.verdict for r in self.ratios}
        return next((w for w in ("worse", "unresolved", "better") if w in words), "no worse")

    def line(self, tolerance: float) -> str:
        """The one-line verdict of the pair, naming the variables that decided it."""
        word = self.verdict()
        if word == "no worse":
            return f"no worse within {tolerance:.0%} ({len(self.ratios)} variables)"
        return f"{word}: " + ", ".join(r.describe() for r in self.ratios if r.verdict == word)


def judge(samples: list[float], better: str, tolerance: float) -> tuple[float, float, float,
                                                                         str]:
    """(median, low, high, verdict) of per-session new/old ratios, as goodness."""
    goodness = [s if better == HIGHER else 1 / s for s in samples]
    low, high = median_interval(goodness)
    median = statistics.median(goodness)
    if len(samples) < MIN_SESSIONS:
        return median, low, high, "unresolved"
    if high < 1 - tolerance:
        return median, low, high, "worse"
    if low > 1 + tolerance:
        return median, low, high, "better"
    if low >= 1 - tolerance:
        return median, low, high, "no worse"
    return median, low, high, "unresolved"


def _key(case: Case) -> tuple[str, str]:
    """What pairs a test case across environments: its check and display name.

    The transport part of the name is the transport's current name (Open MPI
    5's ``ob1-sm`` for Open MPI 4's ``ob1-vader``).
    """
    name = case.name.replace(f"%transport={case.transport} ",
                             f"%transport={current_name(case.transport)} ")
    return case.check, name


@dataclass
class Comparison:
    """The two environments compared on one partition, and every pair's ratios."""

    old: str
    new: str
    partition: str
    tolerance: float
    sessions: list[str]           # UUIDs of the sessions that ran both
    pairs: list[Pair]

    def lines(self) -> list[str]:
        """The comparison as the command prints it: a line per pair, then the variables."""
        out = [f"upgrade {self.old} -> {self.new} on {self.partition}: {len(self.sessions)} "
               f"session(s) ran both; goodness = new/old where higher is better, old/new "
               f"where lower is (above 1: better), median over the sessions with its "
               f"{median_coverage(len(self.sessions)):.0%} interval; tolerance "
               f"{self.tolerance:.0%}"]
        if len(self.sessions) < MIN_SESSIONS:
            out.append(f"  unresolved: {len(self.sessions)} session(s) ran both, at least "
                       f"{MIN_SESSIONS} are needed for a verdict")
        for pair in self.pairs:
            out.append(f"  {pair.check} {pair.transport} {pair.mapping}: "
                       f"{pair.line(self.tolerance)}")
        for pair in self.pairs:
            out.append(f"  {pair.test} ({pair.sessions} sessions)")
            out += [f"    {r.describe():<44} {r.verdict} ({r.better} is better, {r.unit})"
                    for r in pair.ratios]
        return out


def compare(history: list[tuple[dict, list[Case]]], old: str, new: str, partition: str,
            tolerance: float = TOLERANCE) -> Comparison:
    """The upgrade comparison of ``old`` against ``new`` on ``partition`` (``system:part``).

    An error when no stored session ran both there.
    """
    if not 0 < tolerance < 1:
        raise SentinelError(f"tolerance {tolerance}: must be between 0 and 1")
    samples: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    olds: dict[tuple, Case] = {}
    sessions = []
    for info, cases in history:
        here = [c for c in cases if f"{c.system}:{c.partition}" == partition
                and c.result == "pass"]
        by_env = {env: {_key(c): c for c in here if c.environ == env}
                  for env in (old, new)}
        both = set(by_env[old]) & set(by_env[new])
        if both:
            sessions.append(str(info.get("uuid") or ""))
        for key in both:
            a, b = by_env[old][key], by_env[new][key]
            olds[key] = a
            for name in _verdict_variables(a) & _verdict_variables(b):
                x, y = a.variables[name].declared_value, b.variables[name].declared_value
                if x and y:
                    samples[key][name].append(y / x)
    if not sessions:
        raise SentinelError(f"no stored session ran both {old} and {new} on {partition}: run "
                            f"the same selection with -p '{old}$|{new}$' (sentinel upgrade "
                            "compares what one session measured of each)")
    return Comparison(old, new, partition, tolerance, sessions,
                      [_pair(olds[key], samples[key], tolerance) for key in sorted(samples)])


def _verdict_variables(case: Case) -> set[str]:
    """The variables of ``case`` that can fail it and have a direction."""
    judged = set(case.judged) if case.judged is not None else {
        n for n, v in case.variables.items() if v.headline}
    return {n for n in judged if n in case.variables and case.variables[n].decl is not None
            and case.variables[n].decl.better in (HIGHER, LOWER)}


def _pair(case: Case, per_variable: dict[str, list[float]], tolerance: float) -> Pair:
    pair = Pair(case.check, case.transport, case.mapping, case.name,
                max((len(v) for v in per_variable.values()), default=0))
    for name, values in sorted(per_variable.items()):
        decl = case.variables[name].decl
        assert decl is not None  # _verdict_variables keeps declared ones only
        median, low, high, word = judge(values, decl.better, tolerance)
        pair.ratios.append(Ratio(name, case.variables[name].unit, decl.better, tuple(values),
                                 median, low, high, word))
    return pair


def candidates(cases: list[Case]) -> list[tuple[str, str, str]]:
    """``(system:partition, old, new)``: each environment named as another build of one.

    The two ran on the same partition: another version (``openmpi`` and
    ``openmpi-5_0``, ``sentinel.site.names``) or the standard-ABI build
    (``mpich-5_0`` and ``mpich-5_0-abi``).
    """
    envs: dict[str, set[str]] = defaultdict(set)
    for c in cases:
        envs[f"{c.system}:{c.partition}"].add(c.environ)
    return sorted((part, old, new) for part, names in envs.items() for old in names
                  for new in names if re.fullmatch(rf"{re.escape(old)}-(\d\w*|abi)", new))
