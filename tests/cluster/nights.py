"""Sessions as a site runs them night after night, on this host: for the nightly's trial.

Each session is what the documented nightly command does: ``sentinel
baseline`` (the bands learnt from the sessions stored so far), ``reframe``
(here inside a network namespace whose loopback carries the TCP traffic,
``tests/cluster/degrade.py``) and ``sentinel report``. :class:`Night` is what
its report said: which test cases failed, with what, and whether the report
named the host's or the MPI's; which judged values were provisional; which
sessions the learnt bands came from.

Used by ``benchmarks/nightly_trial.py`` (the whole trial) and by
``tests/integration/test_nightly_local.py`` (a short one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFRAME = str(Path(sys.executable).parent / "reframe")
SENTINEL = [sys.executable, "-m", "sentinel.results.cli"]
#: The trial's selection: the point-to-point, matching and ring checks over Open
#: MPI's TCP and shared-memory paths, core mapping, in the quick mode.
CHECKS = ("pt2pt.py", "matching.py", "ring.py")
SELECTION = ["--mode", "quick", "-p", "openmpi$", "-n",
             "(Pt2ptCheck|MatchingCheck|RingCheck).*transport=(ob1-tcp|ob1-vader).*mapping=core"]
TCP, SHM = "ob1-tcp", "ob1-vader"


@dataclass
class Failure:
    """A failed test case as the report said it."""

    test: str
    reason: str
    #: The report folded it into a host line (the node's, not the MPI's).
    host: bool
    #: The judged variables outside their bands, as the report listed them.
    variables: list[str] = field(default_factory=list)

    @property
    def transport(self) -> str:
        """The test case's transport (``ob1-tcp``)."""
        return next((p.split("=", 1)[1] for p in self.test.split() if
                     p.startswith("%transport=")), "")


@dataclass
class Night:
    """One session and what its report said."""

    returncode: int
    session: str
    failures: list[Failure]
    #: Judged variables without a band, test case -> variable -> why.
    provisional: dict[str, dict[str, str]]
    #: Test case -> the stored sessions its learnt bands came from.
    learnt_from: dict[str, list[str]]
    #: The host lines of the report (nodes slowed as a whole).
    host_lines: list[str]
    #: Every judged value: (test case, variable, value, verdict).
    judged: list[tuple[str, str, float | None, str]]
    output: str = ""

    @property
    def passed(self) -> bool:
        """Whether the session passed: nothing failed."""
        return not self.failures

    def said(self) -> str:
        """One line: what the session's report said."""
        if not self.failures:
            bands = sum(bool(v) for v in self.learnt_from.values())
            waiting = sum(len(v) for v in self.provisional.values())
            return (f"PASS ({bands} test case(s) judged against learnt bands, "
                    f"{waiting} judged value(s) provisional)")
        return "FAIL: " + "; ".join(
            f"{f.test.split(' %build')[0]} "
            + ("named as the host's" if f.host else "named as the MPI's")
            + (f" ({', '.join(f.variables)})" if f.variables else f" ({f.reason[:160]})")
            for f in self.failures)


def environment(out: Path) -> dict[str, str]:
    """What every command of a session runs with: its output, TCP over the loopback."""
    env = {**os.environ, "SENTINEL_OUTPUT": str(out), "OMPI_MCA_btl_tcp_if_include": "lo",
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "no_proxy": "127.0.0.1,localhost"}
    env.pop("SENTINEL_BASELINES", None)  # beside the session's results database
    if os.geteuid() == 0:  # a test environment: never in a site configuration
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def night(out: Path, inside: list[str], baseline: list[str],
          selection: list[str] = SELECTION, checks: tuple[str, ...] = CHECKS) -> Night:
    """One session under ``out``: learn the baseline, run the selection, read the report."""
    out.mkdir(parents=True, exist_ok=True)
    env = environment(out)
    learnt = subprocess.run([*SENTINEL, "baseline", *baseline], capture_output=True,
                            text=True, env=env, cwd=out, timeout=600)
    if learnt.returncode != 0:
        raise RuntimeError(f"sentinel baseline: exit {learnt.returncode}: "
                           f"{learnt.stdout[-2000:]}{learnt.stderr[-2000:]}")
    before = set((out / "reports").glob("run-report-*.json"))
    files = [x for c in checks for x in ("-c", str(ROOT / "checks" / c))]
    run = subprocess.run([*inside, REFRAME, "-C", str(ROOT / "config" / "settings.py"), *files,
                          *selection, "--system", "local:cpu", "-r"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         cwd=out, timeout=1800)
    new = sorted(set((out / "reports").glob("run-report-*.json")) - before)
    if not new:
        raise RuntimeError(f"reframe wrote no run report (exit {run.returncode}): "
                           f"{run.stdout[-3000:]}")
    report = subprocess.run([*SENTINEL, "report", str(new[-1])], capture_output=True,
                            text=True, env=env, cwd=out, timeout=600)
    summary = json.loads((out / "reports" / "sentinel-report.json").read_text())
    session = json.loads(new[-1].read_text())["session_info"]["uuid"]
    return _night(run.returncode, session, summary,
                  learnt.stdout + run.stdout[-4000:] + report.stdout + report.stderr)


def _night(returncode: int, session: str, summary: dict, output: str) -> Night:
    hosted = {t for h in summary["host_slowdowns"] for t in h["test_cases"]}
    failing: dict[str, list[str]] = {}
    judged = []
    for v in summary["variables"]:
        if v["verdict"] == "FAIL":
            first = "".join(f"{x:.4g} then " for x in v["earlier_values"])
            lo, hi = (f"{x:.4g}" if x is not None else "open"
                      for x in (v["lower_bound"], v["upper_bound"]))
            failing.setdefault(v["test"], []).append(
                f"{v['variable']} {first}{v['value']:.4g} {v['unit']}, outside its "
                f"{v['band_origin']} band [{lo}, {hi}]")
        if v["verdict"] in ("PASS", "FAIL", "provisional"):
            judged.append((v["test"], v["variable"], v["value"], v["verdict"]))
    failures = [Failure(f["test"], f["reason"] or "", f["test"] in hosted,
                        failing.get(f["test"], []))
                for f in summary["failed_test_cases"]]
    return Night(returncode, session, failures,
                 {b["test"]: b["provisional"] for b in summary["baselines"] if b["provisional"]},
                 {b["test"]: b["sessions"] for b in summary["baselines"]},
                 [h["verdict"] for h in summary["host_slowdowns"]], judged, output)


def tcp_bandwidth(nights_out: Path) -> float:
    """The median peak bandwidth over TCP (MB/s) in the stored sessions under ``nights_out``."""
    sys.path.insert(0, str(ROOT / "src"))
    from sentinel.results.report.history import load_history
    from sentinel.results.report.load import Inputs

    inputs = Inputs()
    load_history(nights_out / "var" / "results.db", inputs)
    values = sorted(c.variables["bw_peak"].value for _, cases in inputs.history for c in cases
                    if c.check == "Pt2ptCheck" and c.transport == TCP and "bw_peak" in c.variables)
    if not values:
        raise RuntimeError(f"no ob1-tcp bw_peak stored under {nights_out}")
    return values[len(values) // 2]


# -- the captured unchanged sessions (tests/data/nights) ---------------------------------

#: Sessions this close after another of the same group are its retry (measured
#: again right after it, as ReFrame's --max-retries does at the end of a run).
RETRY_WITHIN_S = 180.0


@dataclass(frozen=True)
class Measured:
    """One test case in one captured session: its result and its values."""

    session: str
    start: float
    passed: bool
    values: dict[str, float]


@dataclass
class Series:
    """One test case over the captured sessions: each night and its retry, oldest first."""

    group: str
    check: str
    index: str
    test: str
    nights: list[Measured] = field(default_factory=list)
    #: The measurement taken again right after each night (None where none was).
    retries: list[Measured | None] = field(default_factory=list)

    @property
    def transport(self) -> str:
        """The test case's environment and transport (``openmpi/ob1-tcp``)."""
        parts = self.index.split("/")
        return f"{parts[1]}/{parts[2]}" if len(parts) > 2 else self.index


def capture(groups: dict[str, Path], out: Path, keep: Path | None = None) -> dict:
    """The sessions of each results database (group -> path), compacted, written to ``out``.

    Only what a baseline learns from is kept: each test case's followed,
    judged and host probe variables, its result and its session's start.
    ``keep``: a file written before, whose sessions are kept (a capture
    taken over several days; a session already there is not added twice).
    """
    import gzip

    sys.path.insert(0, str(ROOT / "src"))
    from sentinel.results.report.history import load_history
    from sentinel.results.report.load import Inputs

    data: dict = {"sessions": [], "cases": [], "variables": [], "values": [], "results": []}
    if keep is not None:
        with gzip.open(keep, "rt") as fp:
            data = json.load(fp)
    cases = {(g, check, index): i for i, (g, check, index, _) in enumerate(data["cases"])}
    names = {n: i for i, n in enumerate(data["variables"])}
    known = {s[0] for s in data["sessions"]}
    for group, db in sorted(groups.items()):
        inputs = Inputs()
        load_history(db, inputs, headline_only=True, with_judged=True)
        if inputs.problems:
            raise RuntimeError(f"{db}: {inputs.problems}")
        for info, found in inputs.history:
            if str(info["uuid"]) in known:
                continue
            s = len(data["sessions"])
            data["sessions"].append([str(info["uuid"]), float(info["time_start_unix"]), group,
                                     str(info.get("mode") or "")])
            for c in found:
                if not c.index or c.result not in ("pass", "fail"):
                    continue
                key = (group, c.check, c.index)
                if key not in cases:
                    cases[key] = len(data["cases"])
                    data["cases"].append([group, c.check, c.index, c.name.split(" %build")[0]])
                data["results"].append([s, cases[key], c.result == "pass"])
                for n, v in sorted(c.variables.items()):
                    if v.declared_value is None:
                        continue
                    names.setdefault(n, len(names))
                    data["values"].append([s, cases[key], names[n],
                                           float(f"{v.declared_value:.6g}")])
    data["variables"] = sorted(names, key=names.get)
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt") as fp:
        json.dump(data, fp, separators=(",", ":"))
    return data


def captured(path: Path, joined: dict[str, str] | None = None) -> list[Series]:
    """The captured sessions of ``path`` as each test case's series of nights and retries.

    In each group, a session that started within :data:`RETRY_WITHIN_S` of the
    previous one's start is that one's retry; every other session is a night.
    ``joined``: groups read as the later nights of another (``{"c": "a"}``: the
    same selection captured on another machine, a change of level).
    """
    import gzip

    with gzip.open(path, "rt") as fp:
        data = json.load(fp)
    if joined:
        _join(data, joined)
    sessions = data["sessions"]
    names = data["variables"]
    per: dict[tuple[int, int], dict[str, float]] = {}
    for s, c, n, value in data["values"]:
        per.setdefault((s, c), {})[names[n]] = value
    series = [Series(g, check, index, test) for g, check, index, test in data["cases"]]
    retry_of: dict[int, int] = {}
    by_group: dict[str, list[int]] = {}
    for i, session in enumerate(sessions):
        by_group.setdefault(session[2], []).append(i)
    for order in by_group.values():
        order.sort(key=lambda i: sessions[i][1])
        night = None
        for i in order:
            if night is not None and sessions[i][1] - sessions[night][1] < RETRY_WITHIN_S:
                retry_of[i] = night
                night = None
            else:
                night = i
    retried = {night: retry for retry, night in retry_of.items()}
    measured: dict[tuple[int, int], Measured] = {}
    for s, c, passed in data["results"]:
        measured[(s, c)] = Measured(sessions[s][0], sessions[s][1], bool(passed),
                                    per.get((s, c), {}))
    for (s, c), m in sorted(measured.items(), key=lambda kv: kv[1].start):
        if s in retry_of:
            continue
        series[c].nights.append(m)
        series[c].retries.append(measured.get((retried.get(s, -1), c)))
    return [s for s in series if s.nights]


def _join(data: dict, joined: dict[str, str]) -> None:
    """Read each group of ``joined`` as the one it names: its sessions and test cases."""
    first = {(g, check, index): i for i, (g, check, index, _) in enumerate(data["cases"])}
    moved = {i: first.get((joined[g], check, index), i)
             for i, (g, check, index, _) in enumerate(data["cases"]) if g in joined}
    for session in data["sessions"]:
        session[2] = joined.get(session[2], session[2])
    data["values"] = [[s, moved.get(c, c), n, v] for s, c, n, v in data["values"]]
    data["results"] = [[s, moved.get(c, c), passed] for s, c, passed in data["results"]]


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.cluster.nights capture --group a=DB ... --out FILE``."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m tests.cluster.nights",
                                description="compact unchanged sessions for tests/data/nights")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("capture", help="compact results databases into one file")
    c.add_argument("--group", action="append", default=[], metavar="NAME=DB",
                   help="a group of sessions and its results database (repeatable)")
    c.add_argument("--out", type=Path, required=True, help="the .json.gz to write")
    c.add_argument("--keep", type=Path, default=None,
                   help="a .json.gz written before: its sessions are kept (may be --out)")
    args = p.parse_args(argv)
    groups = {}
    for spec in args.group:
        name, sep, db = spec.partition("=")
        if not sep or not Path(db).is_file():
            p.error(f"--group {spec!r}: expected NAME=DB with DB a results database")
        groups[name] = Path(db)
    if args.keep is not None and not args.keep.is_file():
        p.error(f"--keep {args.keep}: no such file")
    data = capture(groups, args.out, args.keep)
    print(f"{args.out}: {len(data['sessions'])} sessions, {len(data['cases'])} test cases, "
          f"{len(data['values'])} values")
    return 0


if __name__ == "__main__":
    sys.exit(main())
