"""``sentinel``: a thin layer over reframe for what a site does around runs.

    sentinel calibrate --partition local:cpu [--runs 5] -- -n Pt2ptCheck ...
    sentinel calibrate --partition local:cpu --from-reports reports/run-report-*.json
    sentinel report [RUN_REPORT ...] [--db FILE] [--out DIR]
    sentinel plan --system SYSTEM [--mode MODE] [-C extra.py ...] [--json] [-- reframe args]
    sentinel baseline [--db FILE] [--window K] [--min-sessions N] [--min-span 48h] [--floor F]
    sentinel accept --test REGEX [--variable NAME] --by WHO --why TEXT
    sentinel changes [--db FILE] [--mode nightly] [--pvalue P] [--min-shift F] [--variables RE]
    sentinel upgrade OLD NEW --partition SYS:PART [--tolerance 0.05] [--db FILE] [--mode M]
    sentinel init --name SITE [--out FILE] [--force] [--dry-run] [--from DIR] [--keep DIR]
    sentinel vet --system SYS:PART [--drain | --recheck [--resume]] [-- reframe args]
    sentinel health --system SYS:PART [--node NAME] [--drain] [-- reframe args]
    sentinel metrics [RUN_REPORT ...] [--db FILE] [--textfile F.prom] [--push HOST:PORT]
    sentinel notify [RUN_REPORT ...] [--smtp HOST --from A --to B] [--webhook URL]
    sentinel dashboard [--out FILE]

``calibrate`` runs the selection (everything after ``--``, given to reframe as is) on one
partition ``--runs`` times, then writes that partition's entries of
``<references>/<system>.yaml`` (median, tolerance from the spread: see
:mod:`sentinel.results.calibrate`) and prints the diff. Other partitions' entries
are never touched. ``--from-reports`` takes the runs from earlier run reports
(nightly sessions, say) instead of running the selection.

``baseline`` learns each judged variable's band from the stored sessions that
passed (a rolling window, burn-in, level changes held until accepted) and
writes the file every test case reads them from; ``accept`` records who
accepted a level change and why: :mod:`sentinel.results.baseline.command`.

``changes`` prints the change points of the headline variables over the
sessions of the results database (see :mod:`sentinel.results.changes`).

``upgrade`` compares two environments of one partition (the default MPI and
the next version) over the stored sessions that ran both: per transport a
line (no worse, better, worse naming the variables, or unresolved), per
verdict variable the ratio with its interval (:mod:`sentinel.results.upgrade`).

``report`` writes ``sentinel-report.html`` (self-contained), ``.json`` and
``.csv`` under ``<output>/reports`` from the given run reports (default: the
newest) and the results database (trends), and prints the headline table.
A run report that cannot be used (not JSON, not UTF-8, a field of the wrong
type) is named on stderr and left out; the report is written from the rest,
and the exit status is 1. So is it when the newest of the run reports read
records a session that ran no test case (a selection that matched nothing).

``plan`` dry-runs the selection (``reframe --dry-run``: job scripts are
generated, nothing is submitted; stage, log and report go to a temporary directory)
and prints per partition the batch jobs, the node-hours (nodes x time limit)
and the estimated wall time, from the results database where the tests ran
before: see :mod:`sentinel.results.plan`.

``init`` discovers a site (its scheduler, one job per partition and node type
on a compute node, the MPIs and transports found there) and writes its
configuration: see :mod:`sentinel.site.init.command`.

``vet`` measures a partition's nodes, names the bad ones and, only when
asked, drains them, re-checks them in a reservation and resumes them: see
:mod:`sentinel.results.vet.command`. ``health`` is the node-local vet on the
node it runs on, in seconds, for Slurm's ``HealthCheckProgram``:
:mod:`sentinel.results.vet.health`.

Errors are one line naming what is wrong; exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from sentinel.errors import SentinelError
from sentinel.paths import output_dir, references_dir, reframe_command, repo_root, results_db
from sentinel.results import calibrate, changes, plan, report, upgrade
from sentinel.results.baseline import command as baseline
from sentinel.results.metrics import command as metrics
from sentinel.results.metrics import dashboard
from sentinel.results.notify import command as notify
from sentinel.results.plan import cost, dry_run, output, partitions
from sentinel.results.report import inputs as report_inputs
from sentinel.results.report.files import newest_report
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs
from sentinel.results.vet import command as vet
from sentinel.results.vet import health
from sentinel.site.init import command as site_init


def build_parser() -> argparse.ArgumentParser:
    """The ``sentinel`` command line: its subcommands and their options (the manual's reference)."""
    p = argparse.ArgumentParser(prog="sentinel", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("calibrate", help="write a partition's references from repeated runs")
    c.add_argument("--partition", required=True, help="system:partition, e.g. local:cpu")
    c.add_argument("--runs", type=int, default=5, help="runs of the selection (default 5)")
    c.add_argument("--k", type=float, default=calibrate.DEFAULT_K,
                   help="band = k * 1.4826 * MAD of ln(runs), as a ratio either way (default 5)")
    c.add_argument("--floor", action="append", default=[],
                   help="smallest relative tolerance on either side (default 0.10); "
                        "PATTERN=NUMBER sets it for the variables PATTERN matches as "
                        "--variables does (e.g. 'openmpi/ob1-tcp/.*=0.5'), repeatable, "
                        "first match wins")
    c.add_argument("--variables", default="",
                   help="regular expression matching in full the name of each performance "
                        "variable to calibrate, or its path below the partition "
                        "(openmpi/ob1-vader/core/bw_1048576B) (default: the variables each "
                        "test case judged, its check's headline ones or the site's 'judged' "
                        "setting, and the host probe's)")
    c.add_argument("--references", type=Path, default=None,
                   help="reference directory (default $SENTINEL_REFERENCES or config/references)")
    c.add_argument("--config", type=Path, default=None, help="ReFrame configuration file")
    c.add_argument("--checks", type=Path, action="append", default=None,
                   help="check file or directory to load, repeatable (default: checks/; "
                        "naming the file of the selected checks saves loading the others)")
    c.add_argument("--dry-run", action="store_true", help="show the diff, write nothing")
    c.add_argument("--from-reports", type=Path, nargs="+", default=None, metavar="REPORT",
                   help="calibrate from these JSON run reports of earlier runs (nightly "
                        "sessions, say) instead of running the selection --runs times")
    c.add_argument("selection", nargs=argparse.REMAINDER,
                   help="after --: reframe options selecting the checks (-n, -p, -S, --mode)")
    r = sub.add_parser("report", help="write the HTML report and the JSON/CSV summaries")
    report_inputs.add_arguments(r)
    r.add_argument("--out", type=Path, default=None,
                   help="directory to write to (default <output>/reports)")
    _plan_parser(sub)
    baseline.add_parsers(sub)
    _changes_parser(sub)
    _upgrade_parser(sub)
    site_init.add_parser(sub)
    vet.add_parser(sub)
    health.add_parser(sub)
    metrics.add_parser(sub)
    notify.add_parser(sub)
    dashboard.add_parser(sub)
    return p


def _changes_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("changes", help="change points of every performance variable over the "
                                       "sessions in the results database")
    p.add_argument("--db", type=Path, default=None,
                   help="results database (default $SENTINEL_RESULTS_DB or "
                        "<output>/var/results.db)")
    p.add_argument("--pvalue", type=float, default=changes.PVALUE,
                   help=f"significance of a change point (default {changes.PVALUE})")
    p.add_argument("--permutations", type=int, default=changes.PERMUTATIONS,
                   help=f"permutations of each significance test (default "
                        f"{changes.PERMUTATIONS})")
    p.add_argument("--min-shift", type=float, default=changes.MIN_SHIFT,
                   help=f"smallest relative shift of the median reported (default "
                        f"{changes.MIN_SHIFT})")
    p.add_argument("--variables", default="",
                   help="regular expression matching in full the variables to look at "
                        "(default: the headline variables; '.*' for all)")
    p.add_argument("--mode", default=None,
                   help="only the sessions run in this mode (--session-extras=mode=..., "
                        "as the nightly mode marks its sessions), e.g. nightly")


def _upgrade_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("upgrade", help="what changes if environment NEW replaces OLD: per "
                                       "transport a verdict, per variable a ratio with its "
                                       "interval, over the stored sessions that ran both")
    p.add_argument("old", help="the environment in use, e.g. openmpi")
    p.add_argument("new", help="the environment that would replace it, e.g. openmpi-5_0")
    p.add_argument("--partition", required=True, help="system:partition, e.g. local:cpu")
    p.add_argument("--tolerance", type=float, default=upgrade.TOLERANCE,
                   help=f"a relative change within it is no change (default "
                        f"{upgrade.TOLERANCE})")
    p.add_argument("--db", type=Path, default=None,
                   help="results database (default $SENTINEL_RESULTS_DB or "
                        "<output>/var/results.db)")
    p.add_argument("--mode", default=None,
                   help="only the sessions run in this mode (--session-extras=mode=...)")


def _plan_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="jobs, node-hours and wall time of a selection, before "
                                    "it runs (reframe --dry-run)")
    p.add_argument("--system", required=True,
                   help="system (or system:partition) to plan for, e.g. big_site")
    p.add_argument("--mode", default=None,
                   help="ReFrame mode: quick, nightly, acceptance; several comma-separated "
                        "(vet,sweep: what sentinel vet runs) are planned together")
    p.add_argument("-C", dest="configs", type=Path, action="append", default=[],
                   metavar="FILE", help="configuration file added to config/settings.py "
                                        "(repeatable), e.g. tests/config/big_site.py")
    p.add_argument("--db", type=Path, default=None,
                   help="results database with the measured run times (default "
                        "$SENTINEL_RESULTS_DB or <output>/var/results.db)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--defer", type=Path, default=None, metavar="FILE",
                   help="with --mode nightly: write the test cases the nightly budget defers "
                        "tonight to FILE, for reframe's -S deferred_file=FILE")
    p.add_argument("selection", nargs=argparse.REMAINDER,
                   help="after --: more reframe options selecting the checks (-n, -p, -S, -c)")


def _tail(proc: subprocess.CompletedProcess, lines: int = 3) -> str:
    """The last lines of a command's output, one line, without colour codes."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + (proc.stderr or ""))
    return " | ".join([line for line in text.strip().splitlines() if line.strip()][-lines:])


def _run_selection(args: argparse.Namespace, workdir: Path) -> list[tuple[str, dict]]:
    root = repo_root()
    config = args.config or root / "config" / "settings.py"
    selection = [a for a in args.selection if a != "--"]
    checks = [x for path in (args.checks or [root / "checks"]) for x in ("-c", str(path))]
    reports = []
    for i in range(1, args.runs + 1):
        report = workdir / f"calibration-{i}.json"
        cmd = [reframe_command(), "-C", str(config), *checks,
               "--system", args.partition, *selection, "-r", "--report-file", str(report)]
        print(f"sentinel calibrate: run {i}/{args.runs}", file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if not report.exists():
            raise SentinelError(f"run {i}: reframe wrote no report (exit {proc.returncode}): "
                                + _tail(proc))
        reports.append((f"run {i}", json.loads(report.read_text())))
    return reports


def _read_reports(paths: list[Path]) -> list[tuple[str, dict]]:
    """The run reports named by ``--from-reports``; one that cannot be read is an error."""
    reports = []
    for path in paths:
        try:
            reports.append((str(path), json.loads(path.read_text())))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise SentinelError(f"--from-reports {path}: not a readable JSON run report "
                                f"({err})") from None
    return reports


def calibrate_command(args: argparse.Namespace) -> int:
    """Run the selection (or read earlier runs), compute the references, merge, diff, write."""
    if args.from_reports:
        if args.selection:
            raise SentinelError("--from-reports takes the runs from the reports: give no "
                                "selection after --")
        args.runs = len(args.from_reports)
    if args.runs < 2:
        raise SentinelError("at least 2 runs (--runs, --from-reports): the tolerance comes "
                            "from the spread")
    if ":" not in args.partition:
        raise SentinelError(f"--partition {args.partition!r}: expected system:partition")
    floor = calibrate.floors(args.floor)  # a bad --floor fails before the runs
    for path in args.checks or []:
        if not path.exists():
            raise SentinelError(f"--checks {path}: no such file or directory")
    system = args.partition.split(":", 1)[0]
    path = (args.references or references_dir()) / f"{system}.yaml"
    if args.from_reports:
        reports = _read_reports(args.from_reports)
    else:
        with tempfile.TemporaryDirectory(prefix="sentinel-calibrate-") as tmp:
            reports = _run_selection(args, Path(tmp))
    series = calibrate.collect(reports, judged_only=not args.variables)
    refs, notes = calibrate.references(series, args.runs, args.k,
                                       floor, args.variables)
    notes += list(filter(None, [calibrate.time_span_note(reports)]))
    if not refs:
        raise SentinelError("the selection produced no performance values to calibrate")
    old_text = path.read_text() if path.exists() else ""
    new_text = calibrate.render(calibrate.merge(calibrate.load(path), refs, args.partition))
    for line in calibrate.summary(series, refs):
        print(line)
    for note in notes:
        print(f"note: {note}")
    print(calibrate.diff(path, old_text, new_text) or f"{path}: unchanged")
    if not args.dry_run:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new_text)
        print(f"wrote {len(refs)} references of {args.partition} to {path}")
    return 0


def report_command(args: argparse.Namespace) -> int:
    """Write the report; name each input that could not be used, and an empty newest run."""
    reports = args.reports or newest_report(output_dir() / "reports")
    written = report.build(reports, args.db or results_db(),
                           args.out or output_dir() / "reports")
    for line in written.headline:
        print(line)
    for problem in written.problems:
        print(f"sentinel report: left out: {problem}", file=sys.stderr)
    for error in written.errors:
        print(f"sentinel report: {error}", file=sys.stderr)
    print(f"report: {written.html}\nsummary: {written.json}, {written.csv}")
    return 1 if written.problems or written.errors else 0


def _plan_reframe(args: argparse.Namespace, tmp: Path) -> tuple[list[dict], dict]:
    """The system's partitions (``--show-config``) and the selection's dry-run report."""
    for path in args.configs:
        if not path.is_file():
            raise SentinelError(f"-C {path}: no such file")
    configs = [repo_root() / "config" / "settings.py", *args.configs]
    base = [reframe_command(), "--nocolor", *(x for c in configs for x in ("-C", str(c.resolve()))),
            "--system", args.system]
    env = {**os.environ, "SENTINEL_OUTPUT": str(tmp)}
    proc = subprocess.run([*base, "--show-config=systems/0/partitions"],
                          capture_output=True, text=True, env=env)
    try:
        partitions = json.loads(proc.stdout) if proc.returncode == 0 else None
    except ValueError:
        partitions = None
    if not isinstance(partitions, list):
        raise SentinelError(f"reframe could not show the partitions of {args.system} (exit "
                            f"{proc.returncode}): {_tail(proc)}")
    modes = [m.strip() for m in (args.mode or "").split(",") if m.strip()] or [None]
    print(f"sentinel plan: dry-run of the selection on {args.system} (nothing is submitted)",
          file=sys.stderr, flush=True)
    runs = []
    for mode in modes:
        runs += _dry_run(base, mode, [a for a in args.selection if a != "--"], tmp, env)
    return partitions, {"runs": runs}


def _dry_run(base: list[str], mode: str | None, selection: list[str], tmp: Path,
             env: dict[str, str]) -> list[dict]:
    """The runs of one mode's dry-run report (a mode of several: one dry-run each)."""
    report_file = tmp / f"dry-run-{mode or 'default'}.json"
    # --prefix: a system that an extra -C file adds has no prefix under
    # SENTINEL_OUTPUT, and ReFrame would stage into the current directory.
    # --exec-policy=serial: nothing waits on a job in a dry-run, and the
    # asynchronous policy re-examines every waiting test case on each pass
    # (8,082 of them for the example big site's nightly: 130 of 371 s under
    # cProfile); the serial one writes the same job scripts in order.
    proc = subprocess.run([*base, *(["--mode", mode] if mode else []), *selection, "--dry-run",
                           "--exec-policy=serial", "--prefix", str(tmp),
                           "--report-file", str(report_file)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    where = f" of mode {mode}" if mode else ""
    if not report_file.exists() and proc.returncode == 0:
        raise SentinelError(f"the selection{where} matched no test case (reframe --dry-run "
                            "ran none)")
    if not report_file.exists():
        raise SentinelError(f"reframe wrote no report{where} (exit {proc.returncode}): "
                            f"{_tail(proc)}")
    try:
        return json.loads(report_file.read_text()).get("runs") or []
    except ValueError as err:
        raise SentinelError(f"the dry-run's report{where} is not JSON ({err}): {_tail(proc)}") \
            from None


def plan_command(args: argparse.Namespace) -> int:
    """Dry-run the selection, count its jobs and node-hours, estimate its wall time."""
    if args.defer and args.mode != "nightly":
        raise SentinelError(f"--defer {args.defer}: the budget is the nightly's; plan it "
                            "with --mode nightly")
    with tempfile.TemporaryDirectory(prefix="sentinel-plan-") as tmp:
        entries, dry = _plan_reframe(args, Path(tmp))
    if dry_run.cases_in(dry) == 0:
        raise SentinelError("the selection matched no test case")
    parts = partitions.partitions_of(args.system, entries,
                                     partitions.reframe_default_max_jobs())
    jobs, failed = dry_run.jobs_of(dry)
    db = args.db or results_db()
    system = parts[0].system
    known = cost.history(db, system, {j.key for j in jobs})
    nightly = args.mode == "nightly"
    the_plan = plan.build(parts, jobs, failed, known.times, db, last=known.last,
                          defer=nightly)
    unmeasurable = dry_run.unmeasurable(dry)
    the_plan.notes.extend(output.unmeasurable_notes(unmeasurable))
    if args.defer:
        args.defer.write_text(json.dumps(output.deferral_file(the_plan), indent=1) + "\n")
    if args.json:
        selection = [a for a in args.selection if a != "--"]
        print(json.dumps(output.as_json(the_plan, system, args.mode, selection), indent=2))
    else:
        print("\n".join(output.render(the_plan)))
    over = any(row.over_budget for row in the_plan.rows)
    return 1 if failed or unmeasurable or (nightly and over) else 0


def changes_command(args: argparse.Namespace) -> int:
    """Print each change point, oldest first: when, what, how much, how sure, which way."""
    if not 0 < args.pvalue < 1:
        raise SentinelError(f"--pvalue {args.pvalue}: must be between 0 and 1")
    if args.permutations < 19:
        raise SentinelError(f"--permutations {args.permutations}: at least 19, so that a "
                            "p-value of 0.05 can be reached")
    if args.min_shift < 0:
        raise SentinelError(f"--min-shift {args.min_shift}: must be 0 or more")
    try:
        wanted = re.compile(args.variables) if args.variables else None
    except re.error as err:
        raise SentinelError(f"--variables {args.variables!r}: {err}") from None
    db = args.db or results_db()
    if not db.exists():
        raise SentinelError(f"{db}: no results database (run reframe first)")
    inputs = Inputs()
    load_history(db, inputs, headline_only=wanted is None)
    for problem in inputs.problems:
        print(f"sentinel changes: left out: {problem}", file=sys.stderr)
    history = [s for s in inputs.history if args.mode is None or s[0].get("mode") == args.mode]
    found = changes.find(history, args.pvalue, args.permutations, args.min_shift,
                         headline_only=wanted is None)
    found = [c for c in found if wanted is None or wanted.fullmatch(c.variable)]
    for line in changes.render(found, history, args.pvalue):
        print(line)
    return 1 if inputs.problems else 0


def upgrade_command(args: argparse.Namespace) -> int:
    """Print the upgrade comparison; 1 when a transport is worse or a session unreadable."""
    if ":" not in args.partition:
        raise SentinelError(f"--partition {args.partition!r}: give system:partition")
    db = args.db or results_db()
    if not db.exists():
        raise SentinelError(f"{db}: no results database (run reframe first)")
    inputs = Inputs()
    load_history(db, inputs, headline_only=True, with_judged=True)
    for problem in inputs.problems:
        print(f"sentinel upgrade: left out: {problem}", file=sys.stderr)
    history = [s for s in inputs.history if args.mode is None or s[0].get("mode") == args.mode]
    found = upgrade.compare(history, args.old, args.new, args.partition, args.tolerance)
    for line in found.lines():
        print(line)
    worse = any(r.verdict == "worse" for p in found.pairs for r in p.ratios)
    return 1 if worse or inputs.problems else 0


_COMMANDS = {"calibrate": calibrate_command, "report": report_command, "plan": plan_command,
             "changes": changes_command, "baseline": baseline.baseline_command,
             "accept": baseline.accept_command, "init": site_init.init_command,
             "vet": vet.vet_command, "health": health.health, "metrics": metrics.metrics_command,
             "notify": notify.notify_command, "dashboard": dashboard.dashboard_command,
             "upgrade": upgrade_command}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sentinel`` command."""
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except SentinelError as err:
        print(f"sentinel {args.command}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
