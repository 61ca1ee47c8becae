"""The captured unchanged nights replayed through the suite's own decisions.

Each test case's captured nights (:func:`tests.cluster.nights.captured`),
one after the other, judged as the suite judges a session: the learnt
baseline of its judged variables and its host probe
(:func:`sentinel.results.baseline.learn.learn`), a failure measured again
before it is called, named as the host's or the MPI's. From each night that
was judged, a regression of the test case's judged values is injected too,
and whether that night, and one of the three from it, names it is counted.

Used by ``benchmarks/false_alarms.py`` (the false-alarm budget and its table)
and ``tests/unit/test_nights.py`` (the defaults held to the captured nights).
"""

from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from sentinel.analysis.baseline import Settings
from sentinel.analysis.variables import HOST_VARIABLES, declaration, spec_of
from sentinel.results.baseline.learn import CaseHistory, Seen, learn
from tests.cluster import nights

HOST = frozenset(v.template for v in HOST_VARIABLES)


@dataclass
class Tally:
    """What one family's replay gave."""

    nights: int = 0        # nights judged (a band existed for a judged value)
    cases: int = 0         # test cases replayed
    out: int = 0           # nights with a judged value outside its band (first measurement)
    failed: int = 0        # ... and outside again when measured once more: failures
    host: int = 0          # failures the report names as the host's
    #: Nights outside a band once with nothing captured after them to measure
    #: again: the replay cannot say what the retry would have; left out above.
    unsaid: int = 0
    #: Per regression factor, each night it began on: (named that night, named
    #: within 3 nights; None where fewer than 3 nights were captured from it).
    named: dict[float, list[tuple[bool, bool | None]]] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        """Add ``other``'s counts."""
        for k in ("nights", "cases", "out", "failed", "host", "unsaid"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        for f, hits in other.named.items():
            self.named.setdefault(f, []).extend(hits)


@functools.cache
def is_judged(check: str, name: str, every: bool = False) -> bool:
    """Whether ``name`` is judged: a headline variable; with ``every``, any with a direction.

    Asked for every variable of every replayed night (a quarter of replaying
    the captured nights): the declarations do not change, so each answer is
    kept.

    ``every`` is the suite as it was before the headline variables alone were
    judged (every variable with a band): of the captured variables, the
    followed ones are judged too.
    """
    return spec_of(check).judged(name, [".*"] if every else None)


def _worse(check: str, name: str, value: float, factor: float) -> float:
    """``value`` ``factor`` times worse: a time longer, a rate lower."""
    decl = declaration(check, name)
    return value * factor if decl is not None and decl.better == "lower" else value / factor


def history(s: nights.Series, seen: list[Seen], every: bool = False) -> CaseHistory:
    """The test case's stored sessions as ``sentinel baseline`` reads them."""
    names = sorted({n for m in s.nights for n in m.values if is_judged(s.check, n, every)})
    return CaseHistory("quick", s.check, s.index, s.index, s.test, names, {}, seen)


def _night(s: nights.Series, i: int, seen: list[Seen], settings: Settings, retries: int,
           factor: float = 1.0, learnt: dict | None = None,
           every: bool = False) -> tuple[bool, bool | None, bool, Seen]:
    """Night ``i`` judged: (out first, failed, host named, what is stored of it).

    ``failed`` is None where the first measurement was outside and nothing
    was captured after it to stand for the retry: the replay cannot say.

    As the suite judges it: the judged values against their learnt bands;
    a failure measured again (the retry judges only the values that were
    outside, and its probe waits for a quiet node: here the next captured
    measurement, the retry or the sessions after it, whose probe is within
    its bands, of the next :data:`QUIET_LOOKAHEAD`); named as the host's when
    the probe was outside its band in both measurements.
    """
    if learnt is None:
        learnt = learn(history(s, seen, every), settings, [], {})
    bands = {n: lv.band for n, lv in learnt.items() if lv.band is not None}
    judged = [n for n in bands if n not in HOST]
    first = s.nights[i]
    m1 = _regress(s.check, first.values, factor, every) if factor != 1.0 else first.values

    def outside(values: dict[str, float], names: list[str]) -> list[str]:
        return [n for n in names if n in values and bands[n].worse(values[n])]

    def slowed(values: dict[str, float]) -> bool:
        return any(n in values and bands[n].worse(values[n]) for n in bands if n in HOST)

    out1 = outside(m1, judged)
    last = m1
    failed = bool(out1)
    if out1 and retries:
        again = _quiet_retry(s, i, slowed)
        if again is None:
            failed = None  # nothing measured again: the replay cannot say
        else:
            last = _regress(s.check, again, factor, every) if factor != 1.0 else again
            failed = bool(outside(last, out1))
    # the host's when its probe was off in every measurement (the report's rule)
    host = bool(failed) and slowed(last) and slowed(m1)
    stored = Seen(first.session, first.start, first.passed and failed is False, last)
    return bool(out1), failed, host, stored


#: How many captured measurements after a night a retry may wait through for a quiet node.
QUIET_LOOKAHEAD = 3


def _quiet_retry(s: nights.Series, i: int, slowed) -> dict[str, float] | None:
    """The retry's measurement: the first quiet one after night ``i`` (else the first)."""
    later = [m for m in (s.retries[i], *[x for j in range(i + 1, len(s.nights))
                                         for x in (s.nights[j], s.retries[j])])
             if m is not None][:QUIET_LOOKAHEAD]
    quiet = [m.values for m in later if not slowed(m.values)]
    return quiet[0] if quiet else (later[0].values if later else None)


def _regress(check: str, values: dict[str, float], factor: float,
             every: bool = False) -> dict[str, float]:
    """Every judged value ``factor`` times worse; the host probe's as they were."""
    return {n: (_worse(check, n, v, factor) if is_judged(check, n, every) else v)
            for n, v in values.items()}


def replay(s: nights.Series, settings: Settings, retries: int,
           factors: tuple[float, ...], every: bool = False) -> Tally:
    """The series night by night; from each night judged on, each regression injected.

    ``every``: every captured variable with a direction is judged, not the
    headline ones alone (the suite before the headline variables were its verdict).
    """
    tally = Tally(cases=1)
    seen: list[Seen] = []
    for i in range(len(s.nights)):
        learnt = learn(history(s, seen, every), settings, [], {})
        judging = any(lv.band is not None and n not in HOST for n, lv in learnt.items())
        if judging:
            for f in factors:
                hit = _regressed(s, i, seen, settings, retries, f, learnt, every)
                if hit is not None:
                    tally.named.setdefault(f, []).append(hit)
        out1, failed, host, stored = _night(s, i, seen, settings, retries, learnt=learnt,
                                            every=every)
        if judging and failed is None:
            tally.unsaid += 1
        elif judging:
            tally.nights += 1
            tally.out += out1
            tally.failed += failed
            tally.host += host
        seen.append(stored)
    return tally


def _regressed(s: nights.Series, i: int, seen: list[Seen], settings: Settings, retries: int,
               factor: float, learnt: dict, every: bool = False
               ) -> tuple[bool, bool | None] | None:
    """A regression from night ``i`` on: (named that night, named within 3 nights).

    None where the replay cannot say whether night ``i`` names it (nothing
    captured after it to stand for the retry); the second None where fewer
    than 3 nights were captured from night ``i`` on.
    """
    now = list(seen)
    named = []
    for j in range(i, min(i + 3, len(s.nights))):
        _, failed, host, stored = _night(s, j, now, settings, retries, factor,
                                         learnt if j == i else None, every)
        if j == i and failed is None:
            return None
        named.append(bool(failed) and not host)
        now.append(stored)
    return bool(named and named[0]), (any(named) if len(named) == 3 else None)


def changed(s: nights.Series, since: float, settings: Settings,
            retries: int) -> tuple[bool | None, bool, list[str]] | None:
    """The first night from ``since`` on (a change of the machine): failed, the host's, on what.

    The nights before ``since`` are replayed as usual and make the band; None
    where the series has no night judged from ``since`` on. ``failed`` is
    None where nothing was captured after that night to stand for its retry.
    """
    seen: list[Seen] = []
    for i, night in enumerate(s.nights):
        learnt = learn(history(s, seen), settings, [], {})
        bands = {n: lv.band for n, lv in learnt.items()
                 if lv.band is not None and n not in HOST}
        _, failed, host, stored = _night(s, i, seen, settings, retries, learnt=learnt)
        if night.start >= since:
            if not bands:
                return None
            moved = [n for n, b in bands.items() if n in night.values
                     and b.worse(night.values[n])]
            return failed, host, moved
        seen.append(stored)
    return None


#: Groups captured on a second machine, and the groups of the first they continue.
MOVED = {"c": "a", "d": "b"}
#: A judged value this much worse on the second machine (the median of 5
#: nights on each) moved: the first night there should name it.
MOVED_BY = 1.25


@dataclass
class Moved:
    """The first night on the second machine, over the test cases judged on it."""

    judged: int = 0
    moved: int = 0        # a judged value MOVED_BY worse or more
    named_moved: int = 0  # ... failed that night, named as the MPI's
    host_moved: int = 0   # ... failed that night, named as the host's
    named_still: int = 0  # failed that night, nothing moved
    moved_2x: int = 0     # a judged value 2x worse or more
    named_2x: int = 0     # ... failed that night, named as the MPI's


def first_night_moved(data: Path, settings: Settings) -> Moved | None:
    """Each test case's first night on the second machine judged against the first's bands.

    None where ``data`` holds no group of :data:`MOVED`.
    """
    starts = [m.start for s in nights.captured(data) if s.group in MOVED for m in s.nights]
    if not starts:
        return None
    since = min(starts)
    out = Moved()
    for s in nights.captured(data, MOVED):
        said = changed(s, since, settings, 1)
        if said is None or said[0] is None:
            continue
        out.judged += 1
        named = bool(said[0]) and not said[1]
        if moved(s, since):
            out.moved += 1
            out.named_moved += named
            out.host_moved += bool(said[0]) and said[1]
            if moved(s, since, 2.0):
                out.moved_2x += 1
                out.named_2x += named
        else:
            out.named_still += bool(said[0])
    return out


def moved(s: nights.Series, since: float, by: float = MOVED_BY) -> bool:
    """Whether a judged value's median of 5 nights from ``since`` is ``by`` worse than before."""
    before = [m.values for m in s.nights if m.start < since][-5:]
    after = [m.values for m in s.nights if m.start >= since][:5]
    for name in {n for v in after for n in v if is_judged(s.check, n)}:
        old = [v[name] for v in before if name in v]
        new = [v[name] for v in after if name in v]
        if len(old) == len(new) == 5:
            was, now = statistics.median(old), statistics.median(new)
            edge = _worse(s.check, name, was, by)  # a time `by` longer, a rate `by` lower
            if now >= edge if edge > was else now <= edge:
                return True
    return False
