"""``sentinel health``: the node-local vet on the node it runs on, as Slurm's health check.

    sentinel health --system SYS:PART [--node NAME] [--drain [--max-drain 5%]] [-- options]

Run on a compute node (Slurm's ``HealthCheckProgram``, a prolog, or by
hand), on a partition of the local scheduler, whose jobs run on this node
(the local system's ``cpu``; a site's node-local partition). It runs the
``health`` mode: one ping-pong over each transport offered, verified (the
library, the transport, the placement) and judged against the partition's
bands, with the host probe: seconds. A failure is measured again (the
repeat rule). Only the node's own faults count
(:mod:`~sentinel.results.vet.blame`): a node that fails twice for them is
named, and with ``--drain`` drained with the reason (``sentinel:
Pt2ptCheck: ...``), unless someone else drained it, or the suite already
drained ``--max-drain`` of its partition's nodes in the last
``--drain-window`` hours (then the partition's level is in doubt). A
failure of the check itself (its build, its configuration, a reference
file, a launcher, privileges) drains nothing: the health check says it is
broken. The drain is recorded in the results database as ``sentinel
vet``'s are.

Exit status: 0 when the node passed (or failed once and not again), 1 when
it failed twice, 2 when the health check itself is broken (nothing was
judged of the node), so that a wrapper can tell them apart.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

from sentinel.errors import SentinelError
from sentinel.paths import output_dir, repo_root, results_db
from sentinel.results.verdicts import last_attempts
from sentinel.results.vet import actions, decide
from sentinel.results.vet.blame import NODE, blame
from sentinel.results.vet.command import session
from sentinel.results.vet.findings import Finding, first_line
from sentinel.site import nodes as sched


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``health`` subcommand's options."""
    p = sub.add_parser("health", help="the node-local vet on this node, in seconds (Slurm's "
                                      "HealthCheckProgram); drain it when asked")
    p.add_argument("--system", required=True,
                   help="SYSTEM:PARTITION of the local scheduler whose jobs run on this node")
    p.add_argument("--node", default=None,
                   help="this node's scheduler name (default: $SLURMD_NODENAME, else the "
                        "short host name)")
    p.add_argument("--drain", action="store_true",
                   help="drain this node when it fails twice for a fault of its own")
    p.add_argument("--max-drain", default="5%",
                   help="the most nodes of this node's Slurm partition the suite may have "
                        "drained in the window: a count (3) or a percentage of its nodes "
                        "(default 5%%, at least one)")
    p.add_argument("--drain-window", type=float, default=24.0, metavar="HOURS",
                   help="the window --max-drain counts the suite's drains in (default 24)")
    p.add_argument("--checks", type=Path, action="append", default=None,
                   help="check file to load, repeatable (default: checks/pt2pt.py)")
    p.add_argument("-C", dest="config", type=Path, default=None,
                   help="ReFrame configuration (default config/settings.py)")
    p.add_argument("selection", nargs=argparse.REMAINDER,
                   help="after --: more reframe options (-p, -S transports=...)")


def this_node(given: str | None) -> str:
    """The node's name as the scheduler knows it."""
    return given or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


#: Exit status of a health check that could not judge the node.
BROKEN = 2


def failures(report: dict, node: str) -> tuple[list[Finding], list[Finding], int]:
    """The node's and the check's failures of a health run, each naming ``node``; cases judged.

    A finding's ``what`` is the failure's first line (the drain reason's),
    after its cause for the check's (:func:`~sentinel.results.vet.blame.blame`:
    ``the MPI refused to run as root: sanity error: ...``).
    """
    session = report.get("session_info", {}).get("uuid", "")
    nodes, checks, judged = [], [], 0
    for tc in last_attempts(report):
        if tc.get("result") == "skip" or (tc.get("fixture") and tc.get("result") == "pass"):
            continue
        judged += 0 if tc.get("fixture") else 1
        if tc.get("result") in ("fail", "abort"):
            check = (tc.get("display_name") or tc["name"]).split(" %build")[0]
            who = blame(tc)
            what = first_line(tc.get("fail_reason"))
            where = f"{tc.get('system')}:{tc.get('partition')}"
            if who.fault == NODE:
                nodes.append(Finding(node, where, check, what, session))
            else:
                checks.append(Finding(node, where, check, f"{who.cause}: {what}", session))
    return nodes, checks, judged


def _measure(args: argparse.Namespace, node: str, label: str) -> list[Finding]:
    started = time.monotonic()
    # built once: the benchmarks of the node's earlier checks are reused
    cache = ["-S", f"BenchBuild.build_cache={output_dir() / 'var' / 'build-cache'}"]
    report = session(args, "health", f"{node}-{label}", "health", cache,
                     args.checks or [repo_root() / "checks" / "pt2pt.py"])
    took = time.monotonic() - started
    found, broken, judged = failures(json.loads(report.read_text()), node)
    if broken:
        raise SentinelError("; ".join(f"{f.check}: {f.what}" for f in broken)
                            + f" (report {report})")
    if not judged:
        raise SentinelError(f"{label} measurement: no test case ran on {args.system} (report "
                            f"{report}): check the selection and that the partition offers it")
    print(f"sentinel health: {node}: {label} measurement, {judged} test case(s), "
          f"{len(found)} failed, {took:.1f} s (report {report})", flush=True)
    for f in found:
        print(f"  {f.check}: {f.what}")
    return found


def health(args: argparse.Namespace) -> int:
    """Measure this node; again when it fails; drain it when asked and it failed twice.

    A failure of the check itself, or any error before the node is judged,
    drains nothing and exits :data:`BROKEN`, naming the cause.
    """
    node = this_node(args.node)
    try:
        return _judge(args, node)
    except SentinelError as err:
        print(f"sentinel health: {node}: the health check is broken, nothing was judged of "
              f"the node and nothing drained: {err}", file=sys.stderr)
        return BROKEN


def _judge(args: argparse.Namespace, node: str) -> int:
    if args.system.count(":") != 1 or not all(args.system.split(":")):
        raise SentinelError(f"--system {args.system!r}: one partition, as SYSTEM:PARTITION")
    decide.cap(args.max_drain, 1)  # a bad --max-drain is named before anything is measured
    first = _measure(args, node, "first")
    if not first:
        print(f"{node}: healthy")
        return 0
    second = _measure(args, node, "second")
    if not second:
        print(f"{node}: failed once, not again: not named")
        return 0
    reason = f"{sched.PREFIX} {second[0].reason()}"
    print(f"{node}: failed twice: {reason}")
    if args.drain:
        _drain(args, node, reason, first + second)
    return 1


def _drain(args: argparse.Namespace, node: str, reason: str, found: list[Finding]) -> None:
    """Drain ``node`` unless someone else did, or the guard holds it back (it says why)."""
    state = sched.slurm_states([node])[node]
    if state.drained and not state.ours:
        print(f"{node}: already drained by someone else ({state.reason or state.state}): "
              "not touched")
        return
    states = sched.partition_states(sched.partitions_of([node]))
    held = decide.health_guard(states, node, decide.cap(args.max_drain, len(states)),
                               args.drain_window, time.time())
    if held:
        print(f"{node}: not drained: {held}")
        return
    sched.drain(node, reason)
    sessions = " ".join(sorted({f.session for f in found}))
    actions.record(results_db(), [actions.Action(actions.now(), args.system, node, "drain",
                                                 reason, sessions)])
    print(f"drained {node}: {reason}")
