"""``sentinel baseline`` and ``sentinel accept``: bands learnt from the site's own nights.

    sentinel baseline [--db FILE] [--out DIR] [--window 10] [--min-sessions 5]
                      [--min-span 48h] [--k 3] [--floor 0.2] [--depth 60]
    sentinel accept --test REGEX [--variable NAME] [--mode MODE] --by WHO --why TEXT

``baseline`` reads the stored sessions of the results database and writes,
per system, the learnt baseline every test case reads its judged bands from
(:mod:`sentinel.analysis.baseline`, :mod:`sentinel.results.baseline.learn`):
run it before each session (the nightly's command does). ``accept`` records
that a person accepts a level change (who and why, in the results
database), and learns the baseline again: from then on it moves past it.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path

from sentinel.analysis import baseline as fmt
from sentinel.analysis.baseline import BURN_IN, LEARNT, Settings
from sentinel.errors import SentinelError
from sentinel.paths import baselines_dir, results_db
from sentinel.results.baseline import accepts
from sentinel.results.baseline.learn import Acceptance, learn_all
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs

_DEFAULTS = Settings()
#: The stored sessions of each mode read (the newest): the window and enough
#: sessions before it for a level change to be seen.
DEFAULT_DEPTH = 60


def hours(text: str) -> float:
    """``48h``, ``90m``, ``2d`` or a number of hours, as hours; SentinelError otherwise."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smhd]?)\s*", text)
    if not m:
        raise SentinelError(f"--min-span {text!r}: expected hours, or a number with s, m, h "
                            "or d (48h, 90m, 2d)")
    scale = {"s": 1 / 3600, "m": 1 / 60, "h": 1.0, "": 1.0, "d": 24.0}[m.group(2)]
    return float(m.group(1)) * scale


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """``sentinel baseline`` and ``sentinel accept``."""
    b = sub.add_parser("baseline", help="learn each judged variable's band from the stored "
                                        "sessions that passed (run before each session)")
    _db_options(b)
    b.add_argument("--window", type=int, default=_DEFAULTS.window,
                   help=f"the newest passed sessions a band is learnt from (default "
                        f"{_DEFAULTS.window})")
    b.add_argument("--min-sessions", type=int, default=_DEFAULTS.min_sessions,
                   help=f"burn-in: sessions a band needs (default {_DEFAULTS.min_sessions})")
    b.add_argument("--min-span", default=f"{_DEFAULTS.min_span_h:g}h",
                   help=f"burn-in: hours those sessions must span, or 90m, 2d (default "
                        f"{_DEFAULTS.min_span_h:g}h)")
    b.add_argument("--k", type=float, default=_DEFAULTS.k,
                   help=f"band = k * 1.4826 * MAD of ln(values), on the worse side (default "
                        f"{_DEFAULTS.k:g})")
    b.add_argument("--floor", type=float, default=_DEFAULTS.floor,
                   help=f"the smallest tolerance on the worse side (default "
                        f"{_DEFAULTS.floor:g})")
    b.add_argument("--depth", type=int, default=DEFAULT_DEPTH,
                   help=f"the newest stored sessions of each mode read (default "
                        f"{DEFAULT_DEPTH})")
    a = sub.add_parser("accept", help="accept a level change: the baseline moves past it")
    _db_options(a)
    a.add_argument("--test", required=True,
                   help="regular expression searched in each test case's name or baseline "
                        "key (mode|check|partition/environ/transport/mapping...)")
    a.add_argument("--variable", default=None, help="the variable (default: every one of "
                                                    "the test cases with a level change)")
    a.add_argument("--mode", default=None, help="only the test cases of this mode")
    a.add_argument("--by", required=True, help="who accepts it (a name, an e-mail address)")
    a.add_argument("--why", required=True, help="why the new level is the normal one")


def _db_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", type=Path, default=None,
                   help="results database (default $SENTINEL_RESULTS_DB or "
                        "<output>/var/results.db)")
    p.add_argument("--out", type=Path, default=None,
                   help="the folder of the learnt baselines (default $SENTINEL_BASELINES, "
                        "or baselines/ beside the results database)")


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(args.window, args.min_sessions, hours(args.min_span), args.k, args.floor)


def baseline_command(args: argparse.Namespace) -> int:
    """Learn every system's baseline from the database and write it; print what it holds."""
    settings = _settings(args)
    if args.depth < settings.window:
        raise SentinelError(f"--depth {args.depth} is smaller than --window "
                            f"{settings.window}")
    db = args.db or results_db()
    out = args.out or baselines_dir(db)
    if not db.exists():
        print(f"sentinel baseline: {db}: no results database yet; every judged value is "
              "provisional until sessions are stored (run the first session, then this again)")
        return 0
    problems = relearn(db, out, settings, args.depth)
    for problem in problems:
        print(f"sentinel baseline: left out: {problem}", file=sys.stderr)
    return 1 if problems else 0


def relearn(db: Path, out: Path, settings: Settings, depth: int) -> list[str]:
    """Learn and write each system's file; print the summary; the inputs left out."""
    inputs = Inputs()
    load_history(db, inputs, headline_only=True, with_judged=True)
    sessions = _newest(inputs.history, depth)
    previous = {path.stem: _previous(path) for path in sorted(out.glob("*.json"))}
    learnt = learn_all(sessions, settings, accepts.recorded(db), previous)
    newest = max((s[0] for s in sessions), key=lambda i: i.get("time_start_unix") or 0,
                 default={})
    for system, cases in sorted(learnt.items()):
        path = out / f"{system}.json"
        fmt.write(path, {"format": fmt.FORMAT, "system": system, "learnt_at": time.time(),
                         "results_db": str(db.resolve()),
                         "newest_session": str(newest.get("uuid") or ""),
                         "sessions_read": len(sessions), "depth": depth,
                         "settings": asdict(settings), "cases": cases})
        for line in summary(system, path, cases):
            print(line)
    if not learnt:
        print(f"sentinel baseline: {db} holds no test case with a reference index yet")
    return inputs.problems


def _newest(history: list[tuple[dict, list]], depth: int) -> list[tuple[dict, list]]:
    """The newest ``depth`` stored sessions of each mode."""
    by_mode: dict[str, list] = {}
    for session in history:  # oldest first
        by_mode.setdefault(str(session[0].get("mode") or ""), []).append(session)
    return [s for sessions in by_mode.values() for s in sessions[-depth:]]


def _previous(path: Path) -> dict:
    """The cases of an earlier file ({} when it cannot be read: it is written anew)."""
    try:
        return fmt.read(path).get("cases") or {}
    except SentinelError:
        return {}


def summary(system: str, path: Path, cases: dict[str, dict]) -> list[str]:
    """What the file holds: counts per status, then each level change nobody accepted."""
    count = {LEARNT: 0, BURN_IN: 0}
    other, changed = 0, []
    for key, case in sorted(cases.items()):
        for name, entry in case["variables"].items():
            if entry["status"] in count:
                count[entry["status"]] += 1
            else:
                other += 1
            if entry.get("change"):
                changed.append(f"  {key} {name}: {entry['change']['said']}")
    return [f"{path}: {len(cases)} test case(s) of {system}: {count[LEARNT]} band(s) learnt, "
            f"{count[BURN_IN]} provisional (burn-in), {other} without a band",
            *changed]


def accept_command(args: argparse.Namespace) -> int:
    """Record the acceptance of each matching level change, then learn again."""
    db = args.db or results_db()
    out = args.out or baselines_dir(db)
    try:
        wanted = re.compile(args.test)
    except re.error as err:
        raise SentinelError(f"--test {args.test!r}: {err}") from None
    files = sorted(out.glob("*.json"))
    if not files:
        raise SentinelError(f"{out}: no learnt baseline (run 'sentinel baseline' first)")
    found, pending, settings, depth = [], [], _DEFAULTS, DEFAULT_DEPTH
    for path in files:
        data = fmt.read(path)
        settings = Settings(**data.get("settings", {}))
        depth = int(data.get("depth") or DEFAULT_DEPTH)
        for key, case in sorted((data.get("cases") or {}).items()):
            for name, entry in sorted(case["variables"].items()):
                change = entry.get("change") or {}
                if not change:
                    continue
                pending.append(f"{key} ({case['test']}) {name}")
                if (wanted.search(key) or wanted.search(case["test"])) and \
                        args.variable in (None, name) and \
                        args.mode in (None, key.split("|", 1)[0]):
                    found.append(Acceptance(key, name, change["session"], args.by, args.why,
                                            time.time()))
    if not found:
        raise SentinelError(f"no level change nobody accepted matches --test {args.test!r}"
                            + (f" --variable {args.variable}" if args.variable else "")
                            + ("; those waiting: " + "; ".join(pending) if pending
                               else "; none is waiting"))
    accepts.record(db, found)
    for a in found:
        print(f"accepted by {a.by}: {a.key} {a.variable} from session {a.session[:8]} on "
              f"({a.why})")
    problems = relearn(db, out, settings, depth)
    return 1 if problems else 0
