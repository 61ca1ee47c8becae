"""``sentinel vet``: measure a partition's nodes; drain, re-check and resume only when asked.

    sentinel vet --system SYS:PART [--measure local,fabric] [-w NODES | --reservation R]
                 [--from REPORT ...] [--drain [--max-drain 5%]] [-- reframe options]
    sentinel vet --system SYS:PART --recheck [--resume] [--peers 3] [-- reframe options]

A measurement is one reframe session per kind: ``local`` is the vet mode
(the node-local checks on every node at once, ``each_node``), ``fabric`` the
sweep mode (the fabric pairs sweep over the nodes). ``--from`` takes the
first measurement from earlier run reports instead (the nightly's, say).
``--drain`` measures again and drains the nodes named twice, within the
guards of :mod:`sentinel.results.vet.decide`. ``--recheck`` puts the nodes
the suite drained in ``SYS:PART`` into a maintenance reservation (with
``--peers`` idle nodes for the fabric sweep), resumes them into it,
measures them there, and drains them again unless they pass; ``--resume``
leaves those that pass in service. A node drained by anyone else is never
touched. Every action goes to the results database
(:mod:`sentinel.results.vet.actions`) and is printed.

Exit status: 0 when no node was named, 1 otherwise or on an error.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import time
from pathlib import Path

from sentinel.errors import SentinelError
from sentinel.paths import output_dir, reframe_command, repo_root, results_db
from sentinel.results.vet import actions, decide
from sentinel.results.vet.findings import Finding, Measured, measured
from sentinel.site import nodes as sched

#: The mode of each kind of measurement (config/common.py).
MODES = {"local": "vet", "fabric": "sweep"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``vet`` subcommand's options."""
    p = sub.add_parser("vet", help="measure a partition's nodes and name the bad ones; drain, "
                                   "re-check and resume them only when asked")
    p.add_argument("--system", required=True, help="the partition, SYSTEM:PARTITION")
    p.add_argument("--measure", default="local,fabric",
                   help="what a measurement runs: local (the vet mode), fabric (the sweep "
                        "mode) or both, comma-separated (default local,fabric)")
    p.add_argument("-w", "--nodelist", default=None,
                   help="measure these nodes only (a Slurm host list)")
    p.add_argument("--reservation", default=None, help="measure inside this reservation")
    p.add_argument("--from", dest="from_reports", type=Path, nargs="+", default=None,
                   metavar="REPORT", help="take the first measurement from these run reports")
    p.add_argument("--drain", action="store_true",
                   help="measure again and drain the nodes named both times")
    p.add_argument("--max-drain", default="5%",
                   help="the most nodes one session drains: N, or P%% of those measured "
                        "(default 5%%, at least 1); more named drains none")
    p.add_argument("--recheck", action="store_true",
                   help="measure the nodes the suite drained, in a reservation of their own")
    p.add_argument("--resume", action="store_true",
                   help="with --recheck: return the nodes that pass to service")
    p.add_argument("--peers", type=int, default=3,
                   help="with --recheck and a fabric measurement: idle nodes of the same "
                        "partition reserved beside them (default 3)")
    p.add_argument("--minutes", type=int, default=60,
                   help="with --recheck: the reservation's length (default 60)")
    p.add_argument("--checks", type=Path, action="append", default=None,
                   help="check file or directory to load, repeatable (default: checks/; "
                        "naming the files of the checks measured saves loading the others)")
    p.add_argument("-C", dest="config", type=Path, default=None,
                   help="ReFrame configuration (default config/settings.py)")
    p.add_argument("selection", nargs=argparse.REMAINDER,
                   help="after --: more reframe options for every measurement")


def _kinds(text: str) -> list[str]:
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    bad = [k for k in kinds if k not in MODES]
    if bad or not kinds:
        raise SentinelError(f"--measure {text!r}: local, fabric, or both (local,fabric)")
    return kinds


def _where(system: str) -> str:
    if system.count(":") != 1 or not all(system.split(":")):
        raise SentinelError(f"--system {system!r}: one partition, as SYSTEM:PARTITION")
    return system


def measure(args: argparse.Namespace, kinds: list[str], job: list[str], count: int | None,
            label: str) -> Measured:
    """One reframe session per kind over the nodes ``job`` selects; what they named."""
    out = Measured()
    for kind in kinds:
        what = "FabricCheck.nodes" if kind == "fabric" else "each_node_nodes"
        sized = ["-S", f"{what}={count}"] if count else []
        report = session(args, "vet", f"{label}-{kind}", MODES[kind], [*job, *sized],
                         args.checks or [repo_root() / "checks"])
        out.add(measured(json.loads(report.read_text())))
    return out


def session(args: argparse.Namespace, folder: str, label: str, mode: str, extra: list[str],
            checks: list[Path]) -> Path:
    """One reframe session of ``mode`` on ``args.system``; its run report.

    The report goes to ``<output>/reports/<folder>/``; a session that wrote
    none is an error with the end of its output.
    """
    config = args.config or repo_root() / "config" / "settings.py"
    where = output_dir() / "reports" / folder
    where.mkdir(parents=True, exist_ok=True)
    report = where / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{label}.json"
    cmd = [reframe_command(), "-C", str(config), *(x for c in checks for x in ("-c", str(c))),
           "--system", args.system, "--mode", mode, *extra,
           *[a for a in args.selection if a != "--"], "-r", "--report-file", str(report)]
    print(f"sentinel {folder}: {label} measurement: {' '.join(cmd[1:])}", flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if not report.exists():
        raise SentinelError(f"{label} measurement: reframe wrote no report "
                            f"(exit {proc.returncode}): {_why(proc.stdout + proc.stderr)}")
    print(f"sentinel {folder}: {label} measurement: report {report}", flush=True)
    return report


def _why(output: str) -> str:
    """Why reframe stopped: its ``ERROR:`` and the lines indented under it, else its last lines."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip() for line in output.splitlines()]
    for i, line in enumerate(lines):
        if line.startswith("ERROR:"):
            said = [line, *(x.strip() for x in itertools.takewhile(
                lambda x: x.startswith(" "), lines[i + 1:]))]
            return " ".join(said)
    return " | ".join(x for x in lines[-3:] if x)


def _from_reports(paths: list[Path]) -> Measured:
    out = Measured()
    for path in paths:
        try:
            out.add(measured(json.loads(path.read_text())))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError) as err:
            raise SentinelError(f"--from {path}: not a readable JSON run report ({err})") from None
    return out


def _show(label: str, m: Measured) -> None:
    named = m.named()
    print(f"{label}: {len(m.nodes)} nodes measured, named: "
          f"{', '.join(sorted(named)) or 'none'} (sessions "
          f"{', '.join(s[:8] for s in m.sessions)})")
    for node, found in sorted(named.items()):
        for f in found:
            print(f"  {f.where} {node}: {f.check}: {f.what}")
    for line in m.links + m.doubts:
        print(f"  {line}")


def _job_options(args: argparse.Namespace) -> tuple[list[str], list[str] | None]:
    """The -J options selecting the nodes, and those nodes when known."""
    if args.nodelist and args.reservation:
        raise SentinelError("-w and --reservation: give one (a reservation names its nodes)")
    if args.reservation:
        return ["-J", f"reservation={args.reservation}"], sched.slurm_reservation_nodes(
            args.reservation)
    if args.nodelist:
        return ["-J", f"nodelist={args.nodelist}"], sched.expand(args.nodelist)
    return [], None


def _reason(findings: list[Finding]) -> str:
    return f"{sched.PREFIX} {findings[-1].reason()}"


def _drain(decision: decide.Decision, where: str) -> list[actions.Action]:
    done = []
    if not decision.drain:
        return done
    states = sched.slurm_states(sorted(decision.drain))
    for node, findings in sorted(decision.drain.items()):
        state = states[node]
        sessions = " ".join(sorted({f.session for f in findings}))
        if state.drained and not state.ours:
            print(f"{node}: already drained by someone else ({state.reason or state.state}): "
                  "not touched")
            continue
        sched.drain(node, _reason(findings))
        print(f"drained {node}: {_reason(findings)}")
        done.append(actions.Action(actions.now(), where, node, "drain", _reason(findings),
                                   sessions))
    return done


def vet(args: argparse.Namespace, kinds: list[str]) -> int:
    """The first measurement, and with --drain the second and the drains."""
    job, nodes = _job_options(args)
    count = len(nodes) if nodes else None
    first = (_from_reports(args.from_reports) if args.from_reports
             else measure(args, kinds, job, count, "first"))
    _show("first measurement", first)
    if not args.drain:
        if first.named():
            print("not drained: --drain not given")
        return 1 if first.named() else 0
    most = decide.cap(args.max_drain, len(first.nodes))
    held = decide.first_guards(first, most)
    if held or not first.named():
        for line in held:
            print(line)
        return 1 if first.named() else 0
    again = measure(args, kinds, job, count, "second")
    _show("second measurement", again)
    decision = decide.decide(first, again, most)
    for line in decision.held:
        print(line)
    actions.record(results_db(), _drain(decision, args.system))
    return 1


def _ours(where: str) -> dict[str, actions.Action]:
    """The nodes whose last recorded action in ``where`` drained them."""
    last: dict[str, actions.Action] = {}
    for a in actions.recorded(results_db()):
        if a.where == where:
            last[a.node] = a
    return {n: a for n, a in last.items() if a.action in ("drain", "redrain", "kept")}


def _peers(drained: list[str], wanted: int) -> list[str]:
    """Up to ``wanted`` idle nodes sharing a Slurm partition with the drained ones."""
    if not wanted:
        return []
    shared = sched.partitions_of(drained)
    idle = [n for n in sched.idle_nodes(shared) if n not in drained]
    if len(idle) < min(wanted, 1):
        raise SentinelError(f"--recheck: no idle node shares a partition with "
                            f"{', '.join(drained)} for the fabric sweep (--peers 0 to measure "
                            "node-local checks only)")
    return idle[:wanted]


def recheck(args: argparse.Namespace, kinds: list[str]) -> int:
    """Measure the suite's drained nodes in a reservation; re-drain or resume each."""
    if args.nodelist or args.reservation or args.from_reports or args.drain:
        raise SentinelError("--recheck makes its own reservation of the nodes the suite "
                            "drained: no -w, --reservation, --from or --drain with it")
    recorded = _ours(args.system)
    states = sched.slurm_states(sorted(recorded)) if recorded else {}
    drained = sorted(n for n, s in states.items() if s.ours)
    if not drained:
        print(f"no node of {args.system} is drained by the suite: nothing to re-check")
        return 0
    peers = _peers(drained, args.peers) if "fabric" in kinds else []
    name = f"sentinel-recheck-{os.getpid()}"
    sched.reserve(name, drained + peers, args.minutes)
    print(f"reservation {name}: {', '.join(drained + peers)}")
    done: list[actions.Action] = []
    try:
        for node in drained:
            sched.resume(node)
        again = measure(args, kinds, ["-J", f"reservation={name}"],
                        len(drained + peers), "recheck")
        _show("recheck", again)
        done = _settle(args, drained, states, again)
    except BaseException:
        for node in drained:  # never leave a node in service without its verdict
            sched.drain(node, states[node].reason)
        raise
    finally:
        sched.release(name)
        actions.record(results_db(), done)
    return 0 if all(a.action == "resume" for a in done) else 1


def _settle(args: argparse.Namespace, drained: list[str], states: dict[str, sched.NodeState],
            again: Measured) -> list[actions.Action]:
    """Drain again what failed, was not measured or may not resume; the rest stay in service."""
    named, doubt = again.named(), decide.doubts(again) + again.doubts
    sessions = " ".join(again.sessions)
    done = []
    for node in drained:
        if node in named:
            reason, act = _reason(named[node]), "redrain"
        elif node not in again.nodes or doubt:
            why = "not measured" if node not in again.nodes else "; ".join(doubt)
            reason, act = states[node].reason, "kept"
            print(f"{node}: {why}: drained as it was")
        elif not args.resume:
            reason, act = states[node].reason, "kept"
            print(f"{node}: passed; drained as it was (--resume not given)")
        else:
            print(f"resumed {node}: passed the recheck (session "
                  f"{', '.join(s[:8] for s in again.sessions)})")
            done.append(actions.Action(actions.now(), args.system, node, "resume",
                                       "passed the recheck", sessions))
            continue
        sched.drain(node, reason)
        if act == "redrain":
            print(f"drained {node} again: {reason}")
        done.append(actions.Action(actions.now(), args.system, node, act, reason, sessions))
    return done


def vet_command(args: argparse.Namespace) -> int:
    """``sentinel vet``."""
    _where(args.system)
    kinds = _kinds(args.measure)
    if args.resume and not args.recheck:
        raise SentinelError("--resume returns re-checked nodes to service: give it with "
                            "--recheck")
    return recheck(args, kinds) if args.recheck else vet(args, kinds)
