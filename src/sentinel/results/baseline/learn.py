"""The rolling baseline of each judged variable, learnt from the stored sessions.

For each test case (its mode, check and reference index) and each variable
it judged, plus its host probe's figures:

1. the series of its values over the stored sessions of that mode, oldest
   first, every session that measured it (passed or not);
2. its change points (:func:`sentinel.results.changes.of_series`: E-Divisive
   steps, at least :data:`~sentinel.results.changes.MIN_SEGMENT` sessions on
   each side, and blocks that came and went);
3. the level the baseline stands on: from the newest step a person accepted
   (``sentinel accept``) on; up to the first step after it that nobody
   accepted, which the baseline does not move past: that level change is
   said, with since when, until it is accepted;
4. the last ``window`` sessions of that level in which the test case passed,
   less those of a block: the band of :class:`~sentinel.analysis.baseline.Band`,
   or burn-in while they are fewer than ``min_sessions`` or span less than
   ``min_span_h`` hours.

A step that has left the sessions read (the history's depth) but was never
accepted is carried from the previous baseline file, band and all: a change
nobody accepted does not become the new normal by ageing.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

from sentinel.analysis.baseline import (
    BURN_IN,
    HOST_FLOOR,
    LEARNT,
    QUIET,
    SPREAD,
    UNUSABLE,
    WIDE,
    Band,
    Learnt,
    Settings,
    too_wide,
    unusable,
)
from sentinel.analysis.variables import HOST_VARIABLES, NEUTRAL, declaration
from sentinel.results import changes
from sentinel.results.report.load import Case

_HOST = frozenset(v.template for v in HOST_VARIABLES)


@dataclass(frozen=True)
class Seen:
    """One stored session's measurement of one test case."""

    session: str
    time: float  # the session's start, unix seconds
    passed: bool
    values: dict[str, float]


@dataclass
class CaseHistory:
    """A test case over the stored sessions of one mode, oldest first."""

    mode: str
    check: str
    index: str
    where: str
    test: str
    #: The variables it judged in its newest session (headline ones for an older suite).
    judged: list[str] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

    @property
    def key(self) -> str:
        """Its key in the baseline file (:func:`sentinel.analysis.baseline.case_key`)."""
        return f"{self.mode}|{self.check}|{self.index}"


@dataclass(frozen=True)
class Acceptance:
    """A person's acceptance of a level change: the baseline may move past it."""

    key: str        # the test case's baseline key
    variable: str
    session: str    # the first session of the accepted level
    by: str
    why: str
    time: float     # when it was accepted


def histories(sessions: list[tuple[dict, list[Case]]]) -> list[CaseHistory]:
    """Every test case with a reference index, per mode, over ``sessions`` (oldest first)."""
    found: dict[str, CaseHistory] = {}
    for info, cases in sorted(sessions, key=lambda s: s[0].get("time_start_unix") or 0):
        mode = str(info.get("mode") or "")
        start = float(info.get("time_start_unix") or 0)
        uuid = str(info.get("uuid") or "")
        for c in cases:
            if not c.index or c.result not in ("pass", "fail"):
                continue
            h = found.setdefault(f"{mode}|{c.check}|{c.index}",
                                 CaseHistory(mode, c.check, c.index, c.where, c.name))
            values = {n: v.declared_value for n, v in c.variables.items()
                      if v.declared_value is not None}
            h.units.update({n: (v.decl.unit if v.decl else v.unit)
                            for n, v in c.variables.items()})
            h.judged = (list(c.judged) if c.judged is not None
                        else [n for n, v in c.variables.items() if v.headline])
            h.test = c.name
            h.seen.append(Seen(uuid, start, c.result == "pass", values))
    return list(found.values())


def learn(history: CaseHistory, settings: Settings, accepted: list[Acceptance],
          previous: dict[str, dict]) -> dict[str, Learnt]:
    """Each judged and host variable of ``history``: its band, burn-in or why it has none.

    ``previous`` is the test case's entry of the last baseline file (name ->
    its JSON), whose unaccepted changes are carried when they left the history.
    """
    out = {}
    for name in sorted({*history.judged, *(n for s in history.seen for n in s.values
                                            if n in _HOST)}):
        decl = declaration(history.check, name)
        if decl is None or decl.better == NEUTRAL:
            continue
        mine = [a for a in accepted if a.key == history.key and a.variable == name]
        out[name] = _variable(history, name, decl.better, settings, mine,
                              previous.get(name) or {})
    return out


def _variable(h: CaseHistory, name: str, better: str, settings: Settings,
              accepted: list[Acceptance], previous: dict) -> Learnt:
    points = [changes.Point(s.session, s.time, s.values[name]) for s in h.seen
              if name in s.values]
    passed = {s.session for s in h.seen if s.passed}
    if not points:
        return Learnt(BURN_IN, note="provisional: not measured in any stored session yet")
    carried = _carried(previous, points, accepted)
    if carried is not None:
        return carried
    steps, blocked = _levels(h, name, points)
    index = {p.session: i for i, p in enumerate(points)}
    start, took = _accepted_start(index, accepted)
    pending = [c for c in steps if index[c.after.session] > start]
    end = index[pending[0].after.session] if pending else len(points)
    level = [p for p in points[start:end] if p.session in passed and p.session not in blocked]
    change = _said(pending[0], h.units.get(name, "")) if pending else {}
    return _band(level, better, h.units.get(name, ""), settings, change, took, name in _HOST)


def _levels(h: CaseHistory, name: str, points: list[changes.Point]
            ) -> tuple[list[changes.Change], set[str]]:
    """The steps of the series, oldest first, and the sessions inside a block."""
    key = (h.mode, h.where, h.test, name)
    decl = declaration(h.check, name)
    found = changes.of_series(key, points, {name: decl.better if decl else ""},
                              {name: h.units.get(name, "")})
    steps = [c for c in found if not c.block]
    index = {p.session: i for i, p in enumerate(points)}
    blocked: set[str] = set()
    edges = [c for c in found if c.block]
    for first, last in zip(edges[::2], edges[1::2]):
        i, j = index[first.after.session], index[last.after.session]
        blocked |= {p.session for p in points[i:j]}
    return steps, blocked


def _accepted_start(index: dict[str, int], accepted: list[Acceptance]) -> tuple[int, dict]:
    """Where the baseline's level begins: the newest accepted level change's session (0)."""
    best, took = 0, {}
    for a in accepted:
        if a.session in index and index[a.session] >= best:
            best, took = index[a.session], {"session": a.session, "by": a.by, "why": a.why,
                                            "at": a.time}
    return best, took


def _carried(previous: dict, points: list[changes.Point],
             accepted: list[Acceptance]) -> Learnt | None:
    """The previous file's frozen band, when its unaccepted step left the history read."""
    change = previous.get("change") or {}
    session = change.get("session")
    if not session or session in {p.session for p in points}:
        return None
    if any(a.session == session for a in accepted):
        return None
    learnt = Learnt.of_json(previous, "the previous baseline")
    learnt.note = (f"{learnt.note} (carried from the previous baseline: the level change is "
                   "older than the sessions read, and nobody accepted it)").strip()
    return learnt


def _said(c: changes.Change, unit: str) -> dict:
    """A level change the baseline does not move past, as the file and the report say it."""
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(c.after.time))
    said = (f"level changed since {when} UTC (session {c.after.session[:8]}): {c.old:.4g} -> "
            f"{c.new:.4g} {unit} ({c.shift:+.1%}, {c.verdict}, p = {c.pvalue:.3f}); not "
            "accepted: the band stays at the old level (sentinel accept moves it)")
    return {"session": c.after.session, "time": c.after.time, "old": c.old, "new": c.new,
            "shift": c.shift, "pvalue": c.pvalue, "verdict": c.verdict, "said": said}


def _band(level: list[changes.Point], better: str, unit: str, settings: Settings,
          change: dict, accepted: dict, host: bool) -> Learnt:
    """The band of the newest ``window`` passed sessions of the level, once out of burn-in.

    The burn-in asks of the whole level (its passed sessions, oldest to
    newest) what the window may not hold: ``min_sessions`` of them over
    ``min_span_h`` hours.
    """
    pool = level[-settings.window:]
    sessions = [(p.session, p.time) for p in pool]
    span = (level[-1].time - level[0].time) / 3600 if level else 0.0
    if len(level) < settings.min_sessions or span < settings.min_span_h:
        note = (f"provisional (burn-in): {len(level)} passed session(s) of the "
                f"{settings.min_sessions} needed, over {_hours(span)} of the "
                f"{_hours(settings.min_span_h)} needed")
        return Learnt(BURN_IN, None, sessions, note, change, accepted)
    values = [p.value for p in pool]
    why = unusable(values)
    if why:
        return Learnt(UNUSABLE, None, sessions, f"no band: {why}", change, accepted)
    if host:
        band = Band.learn(values, better, unit, settings.k, max(settings.floor, HOST_FLOOR),
                          QUIET)
        return Learnt(LEARNT, band, sessions, "", change, accepted)
    wide = too_wide(values)
    band = Band.learn(values, better, unit, settings.k, settings.floor,
                      WIDE if wide else SPREAD)
    return Learnt(LEARNT, band, sessions, wide, change, accepted)


def _hours(h: float) -> str:
    return f"{h:.1f} h" if h >= 1 else f"{60 * h:.0f} min"


def learn_all(sessions: list[tuple[dict, list[Case]]], settings: Settings,
              accepted: list[Acceptance], previous: dict) -> dict[str, dict]:
    """The file's ``cases``: each test case's learnt variables, per system.

    Returns system -> case key -> ``{"test", "where", "variables"}``.
    """
    out: dict[str, dict] = defaultdict(dict)
    for h in histories(sessions):
        system = h.where.split(":", 1)[0]
        before = ((previous.get(system) or {}).get(h.key) or {}).get("variables") or {}
        learnt = learn(h, settings, accepted, before)
        out[system][h.key] = {"test": h.test, "where": h.where,
                              "variables": {n: v.as_json() for n, v in learnt.items()}}
    return dict(out)
