"""``sentinel health``: the node-local vet on the node it runs on, as Slurm's health check.

    sentinel health --system SYS:PART [--node NAME] [--drain] [-- reframe options]

Run on a compute node (Slurm's ``HealthCheckProgram``, a prolog, or by
hand), on a partition of the local scheduler, whose jobs run on this node
(the local system's ``cpu``; a site's node-local partition). It runs the
``health`` mode: one ping-pong over each transport offered, verified (the
library, the transport, the placement) and judged against the partition's
bands, with the host probe: seconds. A failure is measured again (the
repeat rule); a node that fails twice is named, and with ``--drain``
drained with the reason (``sentinel: Pt2ptCheck: ...``), unless someone
else drained it. The drain is recorded in the results database as
``sentinel vet``'s are.

Exit status: 0 when the node passed (or failed once and not again), 1 when
it failed twice or on an error, so that a health-check wrapper can act on it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import time
from pathlib import Path

from sentinel.errors import SentinelError
from sentinel.paths import repo_root, results_db
from sentinel.results.verdicts import last_attempts
from sentinel.results.vet import actions
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
                   help="drain this node when it fails twice")
    p.add_argument("--checks", type=Path, action="append", default=None,
                   help="check file to load, repeatable (default: checks/pt2pt.py)")
    p.add_argument("-C", dest="config", type=Path, default=None,
                   help="ReFrame configuration (default config/settings.py)")
    p.add_argument("selection", nargs=argparse.REMAINDER,
                   help="after --: more reframe options (-p, -S transports=...)")


def this_node(given: str | None) -> str:
    """The node's name as the scheduler knows it."""
    return given or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def failures(report: dict, node: str) -> tuple[list[Finding], int]:
    """The failed test cases of a health run, each naming ``node``; and the cases judged."""
    session = report.get("session_info", {}).get("uuid", "")
    found, judged = [], 0
    for tc in last_attempts(report):
        if tc.get("result") == "skip" or tc.get("fixture"):
            continue
        judged += 1
        if tc.get("result") in ("fail", "abort"):
            check = (tc.get("display_name") or tc["name"]).split(" %build")[0]
            found.append(Finding(node, f"{tc.get('system')}:{tc.get('partition')}", check,
                                 first_line(tc.get("fail_reason")), session))
    return found, judged


def _measure(args: argparse.Namespace, node: str, label: str) -> tuple[list[Finding], int]:
    started = time.monotonic()
    report = session(args, "health", f"{node}-{label}", "health", [],
                     args.checks or [repo_root() / "checks" / "pt2pt.py"])
    took = time.monotonic() - started
    found, judged = failures(json.loads(report.read_text()), node)
    if not judged:
        raise SentinelError(f"{label} measurement: no test case ran on {args.system} (report "
                            f"{report}): check the selection and that the partition offers it")
    print(f"sentinel health: {node}: {label} measurement, {judged} test case(s), "
          f"{len(found)} failed, {took:.1f} s (report {report})", flush=True)
    for f in found:
        print(f"  {f.check}: {f.what}")
    return found, judged


def health(args: argparse.Namespace) -> int:
    """Measure this node; again when it fails; drain it when asked and it failed twice."""
    if args.system.count(":") != 1 or not all(args.system.split(":")):
        raise SentinelError(f"--system {args.system!r}: one partition, as SYSTEM:PARTITION")
    node = this_node(args.node)
    first, _ = _measure(args, node, "first")
    if not first:
        print(f"{node}: healthy")
        return 0
    second, _ = _measure(args, node, "second")
    if not second:
        print(f"{node}: failed once, not again: not named")
        return 0
    reason = f"{sched.PREFIX} {second[0].reason()}"
    print(f"{node}: failed twice: {reason}")
    if not args.drain:
        return 1
    state = sched.slurm_states([node])[node]
    if state.drained and not state.ours:
        print(f"{node}: already drained by someone else ({state.reason or state.state}): "
              "not touched")
        return 1
    sched.drain(node, reason)
    sessions = " ".join(sorted({f.session for f in first + second}))
    actions.record(results_db(), [actions.Action(actions.now(), args.system, node, "drain",
                                                 reason, sessions)])
    print(f"drained {node}: {reason}")
    return 1
