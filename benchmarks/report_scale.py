#!/usr/bin/env python3
"""The cost of ``sentinel report`` at site scale (run by hand): report size and build time.

On the 10-partition, 3-MPI fixture ``tests/config/big_site.py``, takes the
test cases of the nightly mode from the real ReFrame (``--dry-run``, nothing
is submitted; or ``--cases`` reuses the run report of one), gives them the
performance values of this project's own captured run reports
(``tests/data/**/run-report*.json``), writes ``--sessions`` nightly sessions
one day apart into a results database, the newest also as a JSON run report,
then times ``sentinel report`` on them. The same is done for the test cases
of one partition alone, so the ratios show how the report grows with the site::

    .venv/bin/python benchmarks/report_scale.py [--cases RUN_REPORT] [--sessions 30]
        [--repeat 3] [--seed 1] [--keep DIR] [--timeout 1800]

How the sessions are made. Each test case takes a template: a passed test
case of the same check from the captured reports, the one that shares most
of its other parameters (``%mode=pairs``), environment, transport and
mapping, the newest on a tie. It copies the template's performance values
(rekeyed to its own ``system:partition``; variables the check no longer
declares are dropped, so the loader has nothing to object to), its
``intervals``, ``unresolved`` and the suite's other fields (queue model,
fabric pairs, outliers, provenance, linkage). A check without a template
(Jacobi, hybrid, OSU...) and a packed job (``transport=<mpi>-all``, whose
values are its transports') keep no performance values. Every value is
scaled by a factor of its partition (within +-15 %) and a noise of its own
each session (lognormal, 2 %), both seeded by ``--seed``. Sessions carry
``mode: nightly``, as ``--session-extras=mode=nightly`` marks them, which is
what ``changes.series`` and the summary's comparable session go by.

Events, so that the report has something to say: from session N-2 on (the 3
newest, ``--step-sessions``: the newest session is the step's third, the first
that can name it), one transport of one partition (Open MPI ucx-tcp where
the site has it) loses 40 % of its bandwidth (every ``MB/s`` variable where higher is
better); in the newest session 3 test cases fail their performance stage
(ReFrame's "failed to meet reference(s)" message naming the variable,
retried once as ``--max-retries=1`` does) and 2 are skipped with a reason.
The test cases the dry run skipped stay skipped, with the suite's
``skip_reason`` where the dry run recorded one (ReFrame 4.10's report has
no field for a skip's message; a skip for skipped dependencies has none).

The sessions go into the database through ReFrame's own storage code
(``StorageBackend.default().store``), with a runtime whose configuration
names the database through an environment variable, so that one runtime
writes both databases.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
REFRAME = str(BIN / "reframe")
SENTINEL = str(BIN / "sentinel")
BASE = ["-C", str(ROOT / "config" / "settings.py"), "-C", str(ROOT / "tests" / "config" /
        "big_site.py"), "--system", "big_site", "-c", str(ROOT / "checks")]
TEMPLATES = "tests/data/**/run-report*.json"
CMDLINE = " ".join([REFRAME, *BASE, "--mode", "nightly", "-r"])

#: Fields of a template test case copied with its performance values.
EXTRA_FIELDS = ("intervals", "unresolved", "queue_model", "queue_evidence", "outliers",
                "fabric_pairs", "provenance", "mpi_linkage", "transport_selected")
#: Partition factors within 1 +- SPREAD; per-value noise, lognormal sigma.
SPREAD, NOISE = 0.15, 0.02
#: Bandwidth kept by the stepped transport; newest sessions after the step.
STEP, STEP_SESSIONS = 0.6, 3
#: The transport that steps, where the partition has it.
STEP_WANTED = ("openmpi", "ucx-tcp")
#: Test cases failed and skipped in the newest session.
FAILS, SKIPS = 3, 2
#: A failed variable misses its reference by this much (the bad way); its band.
MISS, BAND = 0.3, 0.1
DAY = 86400.0

#: Where the storage's configuration reads the database's path.
DB_VAR = "SENTINEL_BENCH_DB"
STORAGE_CONFIG = f'''site_configuration = {{
    "systems": [{{"name": "bench", "hostnames": [".*"], "partitions": [
        {{"name": "p", "scheduler": "local", "launcher": "local", "environs": ["builtin"]}}]}}],
    "environments": [{{"name": "builtin"}}],
    "storage": [{{"enable": True, "sqlite_db_file": "${{{DB_VAR}}}"}}],
}}
'''


@dataclass(frozen=True)
class Template:
    """A passed test case with performance values, from a captured run report."""

    params: dict[str, str]
    environ: str
    transport: str
    mapping: str
    started: float
    tc: dict


@dataclass
class Events:
    """What the generated history holds besides noise."""

    step: tuple[str, str, str] | None = None  # partition, environ, transport
    step_sessions: int = STEP_SESSIONS  # the newest sessions after the step
    failed: dict[int, str] = field(default_factory=dict)   # case index -> variable
    skipped: dict[int, str] = field(default_factory=dict)  # case index -> reason


@dataclass
class Site:
    """The generated inputs of one site and what they hold."""

    label: str
    db: Path
    newest: Path
    partitions: int
    environs: int
    cases: int
    perfvalues: int
    sessions: int
    seconds: float
    events: Events
    problems: list[str]


@dataclass
class Timing:
    """What ``sentinel report`` took and wrote."""

    seconds: list[float] = field(default_factory=list)
    rc: int | None = None
    html: int = 0
    json: int = 0
    csv: int = 0
    figures: int = 0
    failure: str = ""


# -- inputs ----------------------------------------------------------------

def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise SystemExit(f"{what} {path}: cannot be read ({err.strerror})") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise SystemExit(f"{what} {path}: not a JSON file ({err})") from None


def _last_attempts(report: Any, where: str) -> list[dict]:
    """The test cases of a run report (a retry replaces its first attempt)."""
    from sentinel.results.verdicts import last_attempts

    if not isinstance(report, dict) or not isinstance(report.get("runs"), list) \
            or not isinstance(report.get("session_info"), dict):
        raise SystemExit(f"{where}: not a ReFrame run report (no 'session_info' and 'runs')")
    try:
        cases = last_attempts(report)
    except (KeyError, TypeError, AttributeError) as err:
        raise SystemExit(f"{where}: a test case is malformed ({err!r})") from None
    required = ("name", "system", "partition", "environ", "result")
    for tc in cases:
        if not isinstance(tc, dict) or not all(isinstance(tc.get(k), str) for k in required):
            raise SystemExit(f"{where}: a test case lacks one of {', '.join(required)}")
    if not cases:
        raise SystemExit(f"{where}: the run report holds no test case")
    return cases


def _dry_run(tmp: Path, timeout: float) -> Path:
    """The run report of a dry run of big_site's nightly mode (nothing is submitted)."""
    report = tmp / "dry-run.json"
    args = [REFRAME, "--nocolor", *BASE, "--mode", "nightly", "--dry-run", "--prefix", str(tmp),
            "--report-file", str(report)]
    env = {**os.environ, "SENTINEL_OUTPUT": str(tmp)}
    start = time.perf_counter()
    try:
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"reframe --dry-run took longer than {timeout:.0f} s "
                         "(--dry-run-timeout)") from None
    if not report.exists():
        raise SystemExit(f"reframe --dry-run wrote no report (exit {proc.returncode}): "
                         f"{proc.stdout[-2000:]}")
    print(f"dry run of big_site --mode nightly: {time.perf_counter() - start:.0f} s "
          f"(exit {proc.returncode})", flush=True)
    return report


def _params(name: str) -> dict[str, str]:
    """The parameters of a test name but transport, mapping and the fixtures' (``%a.b=``)."""
    pairs = (p.split("=", 1) for p in name.split(" %")[1:] if "=" in p)
    return {k: v.split()[0] if v else v for k, v in pairs
            if k not in ("transport", "mapping") and "." not in k}


def _templates(paths: list[Path]) -> dict[str, list[Template]]:
    """Passed test cases with performance values of the captured reports, by check."""
    out: dict[str, list[Template]] = {}
    for path in paths:
        report = _read_json(path, "template")
        started = float(report.get("session_info", {}).get("time_start_unix") or 0) \
            if isinstance(report, dict) else 0.0
        for tc in _last_attempts(report, str(path)):
            if tc["result"] != "pass" or not isinstance(tc.get("perfvalues"), dict) \
                    or not tc["perfvalues"]:
                continue
            out.setdefault(tc["name"].split()[0], []).append(Template(
                _params(tc["name"]), tc["environ"], str(tc.get("transport") or ""),
                str(tc.get("mapping") or ""), started, tc))
    if not out:
        raise SystemExit(f"no template: no passed test case with performance values in "
                         f"{len(paths)} run reports")
    return out


def _pick(tc: dict, templates: dict[str, list[Template]]) -> Template | None:
    """The template closest to ``tc``: its other parameters, environment, transport, mapping."""
    candidates = templates.get(tc["name"].split()[0])
    if not candidates:
        return None
    mine = _params(tc["name"])
    transport, mapping = str(tc.get("transport") or ""), str(tc.get("mapping") or "")

    def score(t: Template) -> tuple[int, int, int, int, float]:
        shared = sum(t.params.get(k) == v for k, v in mine.items())
        return (shared, t.transport == transport and t.environ == tc["environ"],
                t.transport == transport, t.mapping == mapping, t.started)

    return max(candidates, key=score)


def _is_packed_job(tc: dict) -> bool:
    transport = str(tc.get("transport") or "")
    return transport.endswith(("-all", "/all"))


# -- the base session --------------------------------------------------------

def _with_values(tc: dict, template: Template | None) -> dict:
    """``tc`` with the template's performance values (rekeyed) and the suite's fields."""
    from sentinel.analysis.variables import declaration

    out = dict(tc)
    if template is None or _is_packed_job(tc) or tc["result"] != "pass":
        return out
    check = tc["name"].split()[0]
    where = f"{tc['system']}:{tc['partition']}"
    perfvalues = {}
    for key, entry in template.tc["perfvalues"].items():
        name = key.split(":", 2)[-1]
        if declaration(check, name) is not None and isinstance(entry, list) and len(entry) == 6:
            perfvalues[f"{where}:{name}"] = list(entry)
    out["perfvalues"] = perfvalues
    for key in EXTRA_FIELDS:
        if key in template.tc:
            out[key] = copy.deepcopy(template.tc[key])
    kept = {k.split(":", 2)[-1] for k in perfvalues}
    if isinstance(out.get("intervals"), dict):
        out["intervals"] = {k: v for k, v in out["intervals"].items() if k in kept}
    return out


def _headline(tc: dict) -> str:
    """The first headline variable of a test case ('' for none)."""
    from sentinel.analysis.variables import declaration

    check = tc["name"].split()[0]
    for key in sorted(tc.get("perfvalues") or {}):
        name = key.split(":", 2)[-1]
        decl = declaration(check, name)
        if decl is not None and decl.is_headline(name) and \
                isinstance(tc["perfvalues"][key][0], (int, float)):
            return name
    return ""


def _is_bandwidth(check: str, name: str) -> bool:
    from sentinel.analysis.variables import HIGHER, declaration

    decl = declaration(check, name)
    return decl is not None and decl.unit == "MB/s" and decl.better == HIGHER


def _events(cases: list[dict], partition: str, rng: random.Random) -> Events:
    """Which transport steps, which test cases fail and which are skipped."""
    events = Events()
    stepping: Counter[tuple[str, str, str]] = Counter()
    for tc in cases:
        if tc["partition"] == partition and not _is_packed_job(tc):
            check = tc["name"].split()[0]
            stepping[(tc["partition"], tc["environ"], str(tc.get("transport") or ""))] += sum(
                _is_bandwidth(check, k.split(":", 2)[-1]) for k in tc.get("perfvalues") or {})
    stepping = Counter({k: n for k, n in stepping.items() if n})
    if stepping:
        wanted = (partition, *STEP_WANTED)
        events.step = wanted if wanted in stepping else stepping.most_common(1)[0][0]
    pool = [i for i, tc in enumerate(cases) if _headline(tc) and
            (tc["partition"], tc["environ"], tc.get("transport")) != events.step]
    rng.shuffle(pool)
    chosen: list[int] = []
    for distinct in (True, False):  # on other partitions first
        for i in pool:
            parts = {cases[j]["partition"] for j in chosen}
            if len(chosen) < FAILS and i not in chosen and \
                    not (distinct and cases[i]["partition"] in parts):
                chosen.append(i)
    events.failed = {i: _headline(cases[i]) for i in chosen}
    rest = [i for i, tc in enumerate(cases) if tc["result"] == "pass" and not _is_packed_job(tc)
            and i not in events.failed and not tc.get("fixture")]
    threaded = [i for i in rest if " %mode=multiple" in cases[i]["name"]]
    for i in rng.sample(threaded or rest, min(SKIPS, len(threaded or rest))):
        events.skipped[i] = ("mode multiple needs MPI_THREAD_MULTIPLE; the MPI library provides "
                             "MPI_THREAD_SERIALIZED" if threaded else
                             "skipped for the benchmark: no node free in the session's window")
    return events


# -- sessions ------------------------------------------------------------------

def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y%m%dT%H%M%S+0000")


def _factor(seed: int, partition: str) -> float:
    return random.Random(f"{seed}:{partition}").uniform(1 - SPREAD, 1 + SPREAD)


def _g(x: float) -> float:
    return float(f"{x:.6g}")


def _scale(tc: dict, factor: float, rng: random.Random, stepped: bool) -> None:
    """Scale every value of ``tc`` (and its interval) by ``factor`` and its own noise."""
    check = tc["name"].split()[0]
    intervals = tc.get("intervals") if isinstance(tc.get("intervals"), dict) else {}
    for entry_key, entry in (tc.get("perfvalues") or {}).items():
        name = entry_key.split(":", 2)[-1]
        if not isinstance(entry[0], (int, float)):
            continue
        m = factor * rng.lognormvariate(0.0, NOISE)
        if stepped and _is_bandwidth(check, name):
            m *= STEP
        entry[0] = _g(entry[0] * m)
        if name in intervals:
            intervals[name] = [_g(intervals[name][0] * m), _g(intervals[name][1] * m)]


def _fail(tc: dict, name: str) -> None:
    """Fail ``tc``'s performance stage on ``name``, as ReFrame words it."""
    from sentinel.analysis.variables import HIGHER, declaration

    key = next(k for k in tc["perfvalues"] if k.split(":", 2)[-1] == name)
    entry = tc["perfvalues"][key]
    decl = declaration(tc["name"].split()[0], name)
    ref = entry[0]
    value = _g(ref * (1 - MISS if decl is not None and decl.better == HIGHER else 1 + MISS))
    entry[:] = [value, ref, -BAND, BAND, entry[4], "fail"]
    lo, hi = _g(ref * (1 - BAND)), _g(ref * (1 + BAND))
    reason = (f"failed to meet reference(s): {name}={value} {entry[4]}, expected {ref} "
              f"(l={lo}, u={hi})")
    tc.update(result="fail", fail_phase="performance",
              fail_reason=f"performance error: {reason}", fail_severe=False,
              fail_info={"exc_type": "PerformanceError", "exc_value": reason, "traceback": []})
    tc.pop("outputdir", None)


def _skip(tc: dict, reason: str) -> None:
    """Skip ``tc`` as the suite records it: ReFrame's report has no field for the reason."""
    tc.update(result="skip", skip_reason=reason, fail_reason=None, perfvalues={},
              intervals={}, unresolved={}, job_completion_time=None,
              job_completion_time_unix=None)


def _session(base: str, index: int, count: int, newest_start: float, events: Events,
             seed: int) -> dict:
    """Session ``index`` of ``count`` (the last the newest) as a full run report."""
    rng = random.Random(f"{seed}:session:{index}")
    report = json.loads(base)
    cases = report["runs"][0]["testcases"]
    start = newest_start - (count - 1 - index) * DAY
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    stepped_from = count - events.step_sessions
    newest = index == count - 1
    done = start
    for i, tc in enumerate(cases):
        stepped = index >= stepped_from and events.step == (
            tc["partition"], tc["environ"], str(tc.get("transport") or ""))
        _scale(tc, _factor(seed, tc["partition"]), rng, stepped)
        if tc["result"] != "skip":
            done = start + 60 + 0.5 * i
            tc.update(job_completion_time_unix=done, job_completion_time=datetime.fromtimestamp(
                done, timezone.utc).isoformat(timespec="seconds"))
        if newest and i in events.failed:
            _fail(tc, events.failed[i])
        elif newest and i in events.skipped:
            _skip(tc, events.skipped[i])
        tc.update(session_uuid=sid, uuid=f"{sid}:0:{i}", run_index=0)
    runs = [_run(cases, 0)]
    retried = [copy.deepcopy(tc) for tc in cases if tc["result"] == "fail"]
    for j, tc in enumerate(retried):
        tc.update(uuid=f"{sid}:1:{j}", run_index=1)
    if retried:  # --max-retries=1: the failed test cases run again, and fail again
        runs.append(_run(retried, 1))
    report["runs"] = runs
    end = done + 60
    report["session_info"].update(
        uuid=sid, time_start=_stamp(start), time_start_unix=start, time_end=_stamp(end),
        time_end_unix=end, time_elapsed=end - start, mode="nightly", cmdline=CMDLINE,
        num_cases=runs[0]["num_cases"], num_failures=runs[-1]["num_failures"],
        num_aborted=0, num_skipped=runs[-1]["num_skipped"])
    return report


def _run(cases: list[dict], index: int) -> dict:
    results = Counter(tc["result"] for tc in cases)
    return {"num_cases": len(cases), "num_failures": results["fail"], "num_aborted": 0,
            "num_skipped": results["skip"], "run_index": index, "testcases": cases}


# -- storage -------------------------------------------------------------------

def _storage(workdir: Path) -> Any:
    """ReFrame's storage backend class, its runtime set up to read ``$SENTINEL_BENCH_DB``."""
    import reframe.core.config as config
    import reframe.core.runtime as runtime
    from reframe.frontend.reporting.storage import StorageBackend

    cfg = workdir / "storage-config.py"
    cfg.write_text(STORAGE_CONFIG)
    site = config.load_config(str(cfg))
    site.select_subconfig("bench")
    runtime.init_runtime(site)
    if runtime.runtime().get_option("storage/0/sqlite_db_file") != f"${{{DB_VAR}}}":
        raise SystemExit("ReFrame's runtime was set up before with another results database")
    return StorageBackend


def _store(storage: Any, db: Path, report: dict, report_file: Path) -> None:
    os.environ[DB_VAR] = str(db)
    storage.default().store(report, str(report_file))


# -- one site --------------------------------------------------------------------

def _build_site(label: str, cases: list[dict], templates: dict[str, list[Template]],
                args: argparse.Namespace, storage: Any, workdir: Path,
                session_info: dict) -> Site:
    """Write the sessions of one site; the newest also as a JSON run report."""
    start = time.perf_counter()
    out = workdir / label
    (out / "reports").mkdir(parents=True, exist_ok=True)
    db = out / "var" / "results.db"
    if db.exists():
        raise SystemExit(f"{db}: already exists; give --keep an empty directory")
    based = [_with_values(tc, _pick(tc, templates)) for tc in cases]
    events = _events(based, min(tc["partition"] for tc in cases), random.Random(args.seed))
    events.step_sessions = args.step_sessions
    base = json.dumps({"session_info": dict(session_info), "restored_cases": [],
                       "runs": [{"testcases": based}]})
    newest_start = (time.time() // DAY) * DAY + 2 * 3600
    newest = out / "reports" / "run-report-newest.json"
    for index in range(args.sessions):
        report = _session(base, index, args.sessions, newest_start, events, args.seed)
        last = index == args.sessions - 1
        if last:
            newest.write_text(json.dumps(report, indent=2))
        _store(storage, db, report, newest if last else out / "reports" / f"s{index}.json")
    problems = _loader_problems(newest)
    perfvalues = sum(len(tc.get("perfvalues") or {})
                     for tc in _last_attempts(report, str(newest)))
    return Site(label, db, newest, len({tc["partition"] for tc in cases}),
                len({tc["environ"] for tc in cases}), len(cases), perfvalues,
                args.sessions, time.perf_counter() - start, events, problems)


def _loader_problems(newest: Path) -> list[str]:
    """What the report's loader says of the newest run report."""
    from sentinel.results.report.files import load_reports
    from sentinel.results.report.load import Inputs

    inputs = Inputs()
    load_reports([newest], inputs)
    return inputs.problems + inputs.errors


def _time_report(site: Site, repeat: int, timeout: float) -> Timing:
    """Run ``sentinel report`` ``repeat`` times; sizes of what it wrote."""
    timing = Timing()
    base = site.db.parent.parent
    out = base / "html"
    env = {**os.environ, "SENTINEL_OUTPUT": str(base)}
    for _ in range(repeat):
        for old in out.glob("sentinel-report.*"):
            old.unlink()
        args = [SENTINEL, "report", str(site.newest), "--db", str(site.db), "--out", str(out)]
        start = time.perf_counter()
        try:
            proc = subprocess.run(args, capture_output=True, text=True, env=env,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            timing.failure = f"timed out after {timeout:.0f} s (--timeout)"
            return timing
        took = time.perf_counter() - start
        (base / "report.stdout").write_text(proc.stdout)
        (base / "report.stderr").write_text(proc.stderr)
        timing.rc = proc.returncode
        html = out / "sentinel-report.html"
        if not html.exists():
            timing.failure = f"exit {proc.returncode}, no HTML written:\n{proc.stderr[-6000:]}"
            return timing
        timing.seconds.append(took)
    html = out / "sentinel-report.html"
    timing.html = html.stat().st_size
    timing.json = (out / "sentinel-report.json").stat().st_size
    timing.csv = (out / "sentinel-report.csv").stat().st_size
    timing.figures = len(re.findall(r"<figure\b", html.read_text(encoding="utf-8")))
    return timing


# -- output -----------------------------------------------------------------------

def _mb(n: float) -> str:
    return f"{n / 1e6:8.2f}"


def _describe(site: Site, cases: list[dict]) -> list[str]:
    ev = site.events
    lines = [f"{site.label}: events injected"]
    if ev.step:
        lines.append(f"  step: {ev.step[0]}+{ev.step[1]} {ev.step[2]}: bandwidth x{STEP} in "
                     f"the {ev.step_sessions} newest sessions")
    lines += [f"  fail: {cases[i]['partition']}+{cases[i]['environ']} {cases[i]['name']} "
              f"({name})" for i, name in ev.failed.items()]
    lines += [f"  skip: {cases[i]['partition']}+{cases[i]['environ']} {cases[i]['name']}"
              for i in ev.skipped]
    if site.problems:
        lines.append(f"  loader problems with the newest run report: {len(site.problems)}")
        lines += [f"    {p}" for p in site.problems[:5]]
    return lines


def _table(rows: list[tuple[Site, Timing]]) -> list[str]:
    head = (f"{'site':<6} {'parts':>5} {'envs':>4} {'cases':>6} {'sess':>4} {'perfvals':>8} "
            f"{'gen s':>6} {'db MB':>8} {'newest':>8} {'html MB':>8} {'json MB':>8} "
            f"{'csv MB':>8} {'figures':>7} {'report s':>9}  exit")
    lines = [head]
    for site, t in rows:
        took = f"{statistics.median(t.seconds):9.1f}" if t.seconds else f"{'-':>9}"
        lines.append(
            f"{site.label:<6} {site.partitions:5d} {site.environs:4d} {site.cases:6d} "
            f"{site.sessions:4d} {site.perfvalues:8d} {site.seconds:6.1f} "
            f"{_mb(site.db.stat().st_size)} {_mb(site.newest.stat().st_size)} {_mb(t.html)} "
            f"{_mb(t.json)} {_mb(t.csv)} {t.figures:7d} {took}  {t.rc}")
        if t.seconds and len(t.seconds) > 1:
            lines.append(f"{'':6} report runs: " + ", ".join(f"{s:.1f}" for s in t.seconds))
    return lines


def _ratios(big: tuple[Site, Timing], small: tuple[Site, Timing]) -> list[str]:
    (s1, t1), (s0, t0) = big, small
    if not (t1.seconds and t0.seconds and t0.html):
        return ["ratios: not computed (a report run failed)"]
    k = s1.partitions / s0.partitions
    size, took = t1.html / t0.html, statistics.median(t1.seconds) / statistics.median(t0.seconds)
    return [f"ratios {s1.label}/{s0.label} ({k:.0f}x the partitions, "
            f"{s1.cases / s0.cases:.1f}x the test cases): HTML size {size:.1f}x, "
            f"figures {t1.figures / max(t0.figures, 1):.1f}x, time {took:.1f}x "
            f"(linear: {k:.0f}x, quadratic: {k * k:.0f}x)"]


# -- main ----------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=Path, default=None, metavar="RUN_REPORT",
                   help="take the test cases from this run report (of a dry run, say) "
                        "instead of dry-running big_site's nightly mode")
    p.add_argument("--templates", type=Path, nargs="+", default=None, metavar="RUN_REPORT",
                   help=f"run reports whose values the test cases take (default {TEMPLATES})")
    p.add_argument("--sessions", type=int, default=30, help="nightly sessions (default 30)")
    p.add_argument("--repeat", type=int, default=1, help="report runs per site (median)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--step-sessions", type=int, default=STEP_SESSIONS,
                   help=f"newest sessions after the bandwidth step (default {STEP_SESSIONS}: "
                        "the newest session is the 4th after it; with 3 it is the one that "
                        "names the change point)")
    p.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="write everything under DIR and keep it (default: a temporary "
                        "directory, removed at the end)")
    p.add_argument("--timeout", type=float, default=1800,
                   help="seconds one sentinel report may take (default 1800)")
    p.add_argument("--dry-run-timeout", type=float, default=1800,
                   help="seconds the dry run may take (default 1800)")
    return p


def _check(args: argparse.Namespace) -> None:
    if not 3 <= args.step_sessions <= args.sessions - 3:
        raise SystemExit(f"--step-sessions {args.step_sessions} of --sessions {args.sessions}: "
                         "a change point needs at least 3 sessions on either side")
    if args.repeat < 1:
        raise SystemExit(f"--repeat {args.repeat}: at least 1")
    if args.timeout <= 0 or args.dry_run_timeout <= 0:
        raise SystemExit("--timeout and --dry-run-timeout must be positive")
    if args.cases is not None and not args.cases.is_file():
        raise SystemExit(f"--cases {args.cases}: no such file")
    if args.keep is not None and args.keep.exists() and any(args.keep.iterdir()):
        raise SystemExit(f"--keep {args.keep}: not an empty directory")


def _run_all(args: argparse.Namespace, workdir: Path) -> None:
    paths = args.templates or sorted(ROOT.glob(TEMPLATES))
    templates = _templates(paths)
    source = args.cases or _dry_run(workdir / "dry-run", args.dry_run_timeout)
    report = _read_json(source, "--cases" if args.cases else "dry run")
    cases = _last_attempts(report, str(source))
    first = min(tc["partition"] for tc in cases)
    print(f"{len(cases)} test cases from {source}; templates: "
          + ", ".join(f"{c} {len(t)}" for c, t in sorted(templates.items())), flush=True)
    storage = _storage(workdir)
    rows = []
    # the small site first: its numbers come before the long wait
    for label, chosen in ((first, [tc for tc in cases if tc["partition"] == first]),
                          ("site", cases)):
        site = _build_site(label, chosen, templates, args, storage, workdir,
                           report["session_info"])
        print(f"{label}: {site.sessions} sessions written in {site.seconds:.0f} s; "
              f"sentinel report...", flush=True)
        print("\n".join(_describe(site, chosen)), flush=True)
        timing = _time_report(site, args.repeat, args.timeout)
        if timing.failure:
            print(f"{label}: sentinel report failed: {timing.failure}", flush=True)
        rows.append((site, timing))
    print()
    print("\n".join(_table(rows)))
    print("\n".join(_ratios(rows[1], rows[0])))
    if args.keep:
        print(f"kept: {workdir}")


def main(argv: list[str]) -> int:
    """Generate the sessions, time the report, print the table."""
    args = _parser().parse_args(argv)
    _check(args)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        _run_all(args, args.keep.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="sentinel-report-scale-") as tmp:
            _run_all(args, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
