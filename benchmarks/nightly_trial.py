#!/usr/bin/env python3
r"""A site's first nights, from no reference at all: false alarms, then a regression (by hand).

Runs, as a new site runs its nightly (``sentinel baseline``, the session,
``sentinel report``: ``tests/cluster/nights.py``), Pt2ptCheck, MatchingCheck
and RingCheck over Open MPI's ob1-vader and ob1-tcp, core mapping, every
session inside one network namespace whose loopback carries the TCP
traffic (root: ``tests/cluster/degrade.py``):

* ``--unchanged`` sessions, nothing changed: the first is provisional, the
  bands are learnt from the sessions that passed (``--window``,
  ``--min-sessions``, ``--min-span``: a night's hours lowered to minutes);
* then ``--limited`` sessions with the namespace's loopback behind a ``tc``
  ``tbf`` limit of ``--fraction`` (a tenth) of the TCP peak bandwidth the
  unchanged sessions measured.

Prints a line per session (what its report said: PASS, or each failed test
case, named as the host's or the MPI's, with its values), then the counts
the issue's claim is made of, and exits 1 when a claim does not hold:
of the unchanged sessions at least ``--unchanged`` - 1 pass and no failure is
named as the MPI's; of the limited ones at least ``--limited`` - 1 fail on
ob1-tcp's bandwidth and on nothing of ob1-vader.

    .venv/bin/python benchmarks/nightly_trial.py --unchanged 20 --limited 20 --out /tmp/trial
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test cluster's helpers, run as a script
from tests.cluster import degrade, nights  # noqa: E402


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--unchanged", type=int, default=20, help="unchanged sessions (default 20)")
    p.add_argument("--limited", type=int, default=20,
                   help="sessions with the TCP path rate-limited (default 20)")
    p.add_argument("--fraction", type=float, default=0.1,
                   help="the limit, as a fraction of the measured TCP peak (default 0.1)")
    p.add_argument("--interval", type=float, default=0.0,
                   help="seconds from one session's start to the next (default 0: back to back)")
    p.add_argument("--window", default="10", help="sentinel baseline --window (default 10)")
    p.add_argument("--min-sessions", default="5",
                   help="sentinel baseline --min-sessions (default 5)")
    p.add_argument("--min-span", default="5m",
                   help="sentinel baseline --min-span: a night's hours as minutes (default 5m)")
    p.add_argument("--out", type=Path, default=None,
                   help="keep the sessions here (default: a temporary directory)")
    return p


def _phase(name: str, count: int, out: Path, inside: list[str], baseline: list[str],
           interval: float) -> list[nights.Night]:
    done = []
    for i in range(count):
        start = time.monotonic()
        n = nights.night(out, inside, baseline)
        done.append(n)
        print(f"{name} {i + 1:2d}: {n.said()}", flush=True)
        time.sleep(max(0.0, interval - (time.monotonic() - start)))
    return done


def _claims(unchanged: list[nights.Night], limited: list[nights.Night]) -> list[str]:
    """What does not hold of the issue's claim ([] when all of it does)."""
    wrong = []
    passed = sum(n.passed for n in unchanged)
    mpi = [f for n in unchanged for f in n.failures if not f.host]
    first = unchanged[0] if unchanged else None
    if first is not None and (not first.passed or not first.provisional):
        wrong.append("the first session did not pass as provisional")
    if passed < len(unchanged) - 1:
        wrong.append(f"{passed} of {len(unchanged)} unchanged sessions passed")
    if mpi:
        wrong.append(f"unchanged sessions named the MPI: {[f.test for f in mpi]}")
    named = sum(_names_the_limit(n) for n in limited)
    if named < len(limited) - 1:
        wrong.append(f"{named} of {len(limited)} limited sessions failed on ob1-tcp's "
                     "bandwidth and on nothing of ob1-vader")
    return wrong


def _names_the_limit(n: nights.Night) -> bool:
    """Whether a limited session failed on ob1-tcp's bandwidth and on nothing of ob1-vader."""
    tcp = any(f.transport == nights.TCP and any(v.startswith("bw_peak ") for v in f.variables)
              for f in n.failures)
    return tcp and not any(f.transport == nights.SHM for f in n.failures)


def main() -> int:
    """Run both phases, print each session and the counts, check the claim."""
    args = _parser().parse_args()
    why = degrade.unavailable()
    if why:
        print(f"nightly_trial: {why}", file=sys.stderr)
        return 1
    baseline = ["--window", args.window, "--min-sessions", args.min_sessions,
                "--min-span", args.min_span]
    with tempfile.TemporaryDirectory(prefix="sentinel-trial-") as tmp:
        out = args.out or Path(tmp)
        with degrade.namespace(f"sentinel-trial-{os.getpid()}") as inside:
            unchanged = _phase("unchanged", args.unchanged, out, inside, baseline,
                               args.interval)
            bw = nights.tcp_bandwidth(out)
            rate = f"{max(1, int(bw * args.fraction * 8))}mbit"
            print(f"limiting the namespace's loopback to {rate} ({args.fraction:g} of the "
                  f"median ob1-tcp bw_peak, {bw:.0f} MB/s)", flush=True)
            degrade.limit(inside, rate)
            limited = _phase("limited", args.limited, out, inside, baseline, args.interval)
    first_judged = next((i for i, n in enumerate(unchanged, 1)
                         if any(n.learnt_from.values())), None)
    print(f"unchanged: {sum(n.passed for n in unchanged)} of {len(unchanged)} passed, "
          f"{sum(bool(n.provisional) for n in unchanged)} with provisional values; judged "
          f"against learnt bands from session {first_judged}; failures named as the host's: "
          f"{sum(f.host for n in unchanged for f in n.failures)}, as the MPI's: "
          f"{sum(not f.host for n in unchanged for f in n.failures)}")
    print(f"limited: {sum(not n.passed for n in limited)} of {len(limited)} failed, "
          f"{sum(_names_the_limit(n) for n in limited)} on ob1-tcp's bandwidth and on "
          "nothing of ob1-vader")
    wrong = _claims(unchanged, limited)
    for line in wrong:
        print(f"claim does not hold: {line}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
