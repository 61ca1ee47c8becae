"""``sentinel init``: a new site's configuration from its scheduler and its compute nodes.

    sentinel init --name SITE [--out FILE] [--force] [--dry-run] [--from DIR] [--keep DIR]
                  [--timeout S] [--budget-jobs N --budget-node-hours H]

1. asks the scheduler what it has (Slurm, or PBS Pro / OpenPBS);
2. submits one discovery job per partition and node type, each reporting
   from a compute node what ``sentinel.site.discover`` finds there;
3. writes ``config/systems/<site>.py`` (never over an existing file
   without ``--force``), prints what it found and what it could not decide,
   and the commands that take the site to its first references.

``--dry-run`` prints the job scripts and submits nothing; ``--from DIR``
writes the configuration from a directory an earlier run (or a run on
another host, ``--keep DIR``) filled: ``scheduler.json`` and the jobs'
``discover-*.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import socket
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from sentinel.errors import SentinelError
from sentinel.paths import output_dir, repo_root
from sentinel.site.init import jobs, scheduler, writer

#: Seconds the discovery jobs may take, queueing included, before they are cancelled.
TIMEOUT = 900.0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``init`` subcommand's options."""
    p = sub.add_parser("init", help="discover a site (scheduler, nodes, MPIs, transports) and "
                                    "write its configuration")
    p.add_argument("--name", required=True, help="the site's system name (a Python identifier)")
    p.add_argument("--out", type=Path, default=None,
                   help="file to write (default config/systems/<name>.py)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    p.add_argument("--dry-run", action="store_true",
                   help="print the discovery job scripts; submit and write nothing")
    p.add_argument("--from", dest="source", type=Path, default=None, metavar="DIR",
                   help="write from the scheduler answer and discovery reports in DIR "
                        "(collected by an earlier run's --keep) instead of asking")
    p.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="where the scheduler's answer, the job scripts and the reports go "
                        "(default <output>/var/init/<name>)")
    p.add_argument("--scheduler", choices=sorted(scheduler.COMMANDS), default=None,
                   help="which scheduler to ask (default: the first whose commands answer)")
    p.add_argument("--timeout", type=float, default=TIMEOUT,
                   help=f"seconds the discovery jobs may take, queueing included (default "
                        f"{TIMEOUT:g}); the rest are cancelled and named")
    p.add_argument("--budget-jobs", type=int, default=None,
                   help="the nightly's budget of batch jobs per partition (written as "
                        "extras['nightly_budget'], what sentinel plan checks)")
    p.add_argument("--budget-node-hours", type=float, default=None,
                   help="the nightly's budget of node-hours per partition")


def _check_args(args: argparse.Namespace) -> Path:
    if not re.fullmatch(r"[A-Za-z_]\w*", args.name):
        raise SentinelError(f"--name {args.name!r}: a site's name is a Python identifier "
                            "(letters, digits, _), as ReFrame's system names are")
    if (args.budget_jobs is None) != (args.budget_node_hours is None):
        raise SentinelError("--budget-jobs and --budget-node-hours go together (a night's "
                            "jobs and node-hours)")
    if args.timeout <= 0:
        raise SentinelError(f"--timeout {args.timeout:g}: seconds, more than 0")
    out = args.out or repo_root() / "config" / "systems" / f"{args.name}.py"
    if out.exists() and not args.force and not args.dry_run:
        raise SentinelError(f"{out} exists: sentinel init never overwrites a configuration "
                            "without --force")
    return out


def _answer(args: argparse.Namespace, keep: Path) -> scheduler.Answer:
    if args.source:
        path = args.source / "scheduler.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise SentinelError(f"{path}: cannot be read ({err}); --from DIR takes a directory "
                                "that sentinel init --keep DIR filled") from None
        return scheduler.Answer.from_json(data, str(path))
    answer = scheduler.ask(args.scheduler)
    keep.mkdir(parents=True, exist_ok=True)
    (keep / "scheduler.json").write_text(json.dumps(answer.to_json(), indent=1))
    return answer


def _reports(args: argparse.Namespace, answer: scheduler.Answer, todo: list[jobs.Job],
             keep: Path) -> tuple[dict[str, tuple[jobs.Job, dict]], list[str]]:
    """The report of each job that has one; a sentence for each that has not."""
    directory = args.source or keep
    failed: dict[str, str] = {}
    if not args.source:
        print(f"sentinel init: {len(todo)} discovery job(s) submitted; waiting (at most "
              f"{args.timeout:g} s)", file=sys.stderr)
        failed = jobs.submit_all(answer.kind, todo, keep, args.timeout)
    found, missing = {}, []
    for job in todo:
        report, why = (None, failed[job.label]) if failed.get(job.label) else (
            jobs.read_report(job, directory))
        if report is None:
            missing.append(f"partition {job.label}: no discovery report: {why}: left out")
        else:
            found[job.label] = (job, report)
    return found, missing


def _next_steps(site: writer.Site, out: Path) -> str:
    first = site.partitions[0]["name"] if site.partitions else "PARTITION"
    config = "config/settings.py"
    return "\n".join([
        f"Next: take {site.name} to its first references (docs: How-to, a new site)",
        f"  1. what it would run:  reframe -C {config} --system {site.name} -c checks -l",
        f"  2. a night's cost:     sentinel plan --system {site.name} --mode nightly"
        + ("" if any("nightly_budget" in p["extras"] for p in site.partitions) else
           "   (give it a budget: sentinel init --budget-jobs N --budget-node-hours H)"),
        f"  3. a first run:        reframe -C {config} --system {site.name} -c checks "
        "--mode quick -r",
        f"  4. references:         sentinel calibrate --partition {site.name}:{first} "
        "--runs 5 -- --mode quick",
        f"     (each partition in turn; writes config/references/{site.name}.yaml)",
        f"  configuration: {out}",
    ])


def init_command(args: argparse.Namespace) -> int:
    """Run ``sentinel init``; 0 when the configuration was written (or the dry run printed)."""
    started = time.monotonic()
    out = _check_args(args)
    keep = args.keep or output_dir() / "var" / "init" / args.name
    if args.dry_run and not args.source:
        keep = Path(tempfile.mkdtemp(prefix="sentinel-init-")) if args.keep is None else keep
    answer = _answer(args, keep)
    parts = scheduler.partitions(answer)
    if not parts:
        raise SentinelError(f"the {answer.kind} scheduler lists no partition with a node that "
                            "runs jobs (every node down, drained or offline?)")
    todo = jobs.jobs_of(parts)
    skipped = [f"partition {p.name}: not up (State or enabled/started): left out"
               for p in parts if not p.usable]
    if args.dry_run:
        for job in todo:
            print(f"# discovery job of partition {job.label} ({job.shape.describe()})")
            print(jobs.script(answer.kind, job, args.source or keep))
        return 0
    reports, missing = _reports(args, answer, todo, keep)
    site = writer.Site(args.name, answer.kind, scheduler.slurm_accounting(answer)
                       if answer.kind == "slurm" else True)
    writer.build(site, parts, reports)
    site.undecided[:0] = skipped + missing
    if answer.kind == "slurm" and not site.accounting:
        site.undecided.append("Slurm has no accounting (AccountingStorageType none): "
                              "partitions use ReFrame's squeue scheduler, which cannot tell a "
                              "job's exit code from sacct")
    if args.budget_jobs is not None:
        for p in site.partitions:
            p["extras"]["nightly_budget"] = {"jobs": args.budget_jobs,
                                             "node_hours": args.budget_node_hours}
    if not site.partitions:
        print("\n".join(f"  not decided: {u}" for u in site.undecided), file=sys.stderr)
        raise SentinelError("no partition could be written (see above); nothing written")
    command = "sentinel init " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if (
        sys.argv[1:2] == ["init"]) else f"sentinel init --name {args.name}"
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    host = f"^{re.escape(socket.gethostname())}$"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(writer.render(site, when, command, host))
    print("\n".join([f"sentinel init: wrote {out} ({len(site.partitions)} partition(s), "
                     f"{len(site.environments)} environment(s)) in "
                     f"{time.monotonic() - started:.0f} s",
                     *(f"  found: {f}" for f in site.found),
                     *(f"  not decided: {u}" for u in site.undecided),
                     _next_steps(site, out)]))
    return 0
