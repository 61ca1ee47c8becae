#!/usr/bin/env python3
r"""Fixed bands against change points: false alarms and detections on real nights (by hand).

Runs Pt2ptCheck over Open MPI's TCP (ob1-tcp) and shared-memory (ob1-vader)
paths as ``--unchanged`` nightly sessions, then ``--degraded`` sessions with
each injected degradation, every session inside a network namespace whose
loopback carries the TCP traffic (``tests/cluster/degrade.py``, root):

* ``tbf``: the namespace's loopback behind an 8 Gbit/s token-bucket limit
  from night k on (k = the first degraded session);
* ``busy``: a busy loop pinned to the core of rank 1 from night k on.

Then it judges each history night by night, as the nightly mode would have:

* fixed bands: references calibrated from the first ``--calibration``
  sessions (``sentinel calibrate``'s median and band), every later value
  checked against them; a night with a value out of band is an alarm;
* change points: on each night from the ``--calibration``-th on, the
  detector (``sentinel.results.changes``) over the sessions so far; a night
  on which a new change point is named is an alarm (dated to its session).

and prints, per method: false alarms over the unchanged nights (nights
alarmed / nights judged) and, per degradation, the nights from k until the
first alarm that names the degraded transport, and the degraded nights
alarmed.

    .venv/bin/python benchmarks/change_points.py --unchanged 30 --degraded 6
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sentinel.results import calibrate, changes
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the degradations of tests/cluster, run as a script
from tests.cluster import degrade  # noqa: E402

SELECTION = ["--mode", "quick", "-S", "Pt2ptCheck.modes=standard",
             "-n", "Pt2ptCheck.*transport=(ob1-tcp|ob1-vader).*mapping=core"]
VARIABLES = "bw_peak|bibw_peak|latency_8B"
FLOORS = calibrate.floors(["0.35", "openmpi/ob1-tcp/.*=0.6"])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--unchanged", type=int, default=30, help="unchanged nights (default 30)")
    p.add_argument("--degraded", type=int, default=6,
                   help="nights of each degradation (default 6)")
    p.add_argument("--calibration", type=int, default=7,
                   help="nights the bands are calibrated from (default 7)")
    p.add_argument("--out", type=Path, default=None,
                   help="keep the sessions here (default: a temporary directory)")
    return p


def _session(inside: list[str], out: Path) -> dict:
    """One session of the selection; its run report."""
    env = {**os.environ, "SENTINEL_OUTPUT": str(out), "OMPI_MCA_btl_tcp_if_include": "lo"}
    if os.geteuid() == 0:  # a test environment: never in a site config
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    before = set((out / "reports").glob("run-report-*.json"))
    subprocess.run([*inside, str(Path(sys.executable).parent / "reframe"), "-C",
                    str(ROOT / "config" / "settings.py"), "-c", str(ROOT / "checks" / "pt2pt.py"),
                    *SELECTION, "--system", "local:cpu", "-r"],
                   capture_output=True, text=True, env=env, cwd=out, timeout=900)
    new = sorted(set((out / "reports").glob("run-report-*.json")) - before)
    if not new:
        raise SystemExit(f"change_points: reframe wrote no run report under {out}")
    return json.loads(new[-1].read_text())


@contextmanager
def _degraded(kind: str) -> Iterator[list[str]]:
    if kind == "tbf":
        with degrade.namespace(f"sentinel-cp-tbf-{os.getpid()}", rate="8gbit") as inside:
            yield inside
    else:
        with degrade.namespace(f"sentinel-cp-busy-{os.getpid()}") as inside, \
                degrade.busy_loop(cpu=1):
            yield inside


def _band_alarms(reports: list[dict], calibration: int) -> list[set[str]]:
    """Per night after the calibration: the transports with a value out of band."""
    series = calibrate.collect([(f"night {i}", r) for i, r in enumerate(reports[:calibration])])
    refs, _ = calibrate.references(series, calibration, calibrate.DEFAULT_K, FLOORS,
                                   VARIABLES)
    nights = []
    for i, report in enumerate(reports[calibration:], start=calibration):
        later = calibrate.collect([(f"night {i}", report)])
        out = set()
        for key, (median, lower, upper, _) in refs.items():
            for value in later.get(key, calibrate.Series("", [])).values:
                if not median * (1 + lower) <= value <= median * (1 + upper):
                    out.add(key.index_values[2])  # the transport
        nights.append(out)
    return nights


def _change_alarms(history: list, calibration: int) -> list[set[str]]:
    """Per night after the calibration: transports with a change point first named that night."""
    seen: set[tuple[str, str, str]] = set()
    nights = []
    for t in range(calibration, len(history)):
        new = set()
        for c in changes.find(history[:t + 1]):
            key = (c.test, c.variable, c.after.session)
            if key not in seen:
                seen.add(key)
                new.add(c.test.split("%transport=")[1].split()[0])
        nights.append(new)
    return nights


def _history(db: Path, keep: list[str]) -> list:
    inputs = Inputs()
    load_history(db, inputs)
    by_uuid = {s[0].get("uuid"): s for s in inputs.history}
    return [by_uuid[u] for u in keep]


def _levels(reports: list[dict]) -> str:
    """Median bw_peak and latency_8B per transport over ``reports``."""
    series = calibrate.collect([(f"night {i}", r) for i, r in enumerate(reports)])
    out = []
    for key, values in sorted(series.items(), key=lambda kv: str(kv[0])):
        if key.variable in ("bw_peak", "latency_8B"):
            out.append(f"{key.index_values[2]} {key.variable} "
                       f"{statistics.median(values.values):.4g} {values.unit}")
    return ", ".join(out)


def _summary(method: str, alarms: list[set[str]], unchanged: int, calibration: int,
             target: str) -> str:
    judged = unchanged - calibration
    false = sum(bool(a) for a in alarms[:judged])
    after = alarms[judged:]
    hits = [i for i, a in enumerate(after) if target in a]
    delay = f"night k+{hits[0]}" if hits else "never"
    return (f"{method:13} false alarms {false}/{judged} unchanged nights; "
            f"{target} named first on {delay}; degraded nights alarmed "
            f"{sum(bool(a) for a in after)}/{len(after)}")


def main() -> int:
    """Run the nights, judge them both ways, print the figures."""
    args = _parser().parse_args()
    reason = degrade.unavailable()
    if reason:
        print(f"change_points: {reason}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="sentinel-change-points-") as tmp:
        out = args.out or Path(tmp)
        (out / "reports").mkdir(parents=True, exist_ok=True)
        runs: dict[str, list[dict]] = {"unchanged": []}
        with degrade.namespace(f"sentinel-cp-calm-{os.getpid()}") as inside:
            for i in range(args.unchanged):
                runs["unchanged"].append(_session(inside, out))
                print(f"unchanged night {i + 1}/{args.unchanged}", file=sys.stderr, flush=True)
        for kind in ("tbf", "busy"):
            with _degraded(kind) as inside:
                runs[kind] = [_session(inside, out) for _ in range(args.degraded)]
            print(f"{kind}: {args.degraded} nights", file=sys.stderr, flush=True)
        for kind, target in (("tbf", "ob1-tcp"), ("busy", "ob1-vader")):
            reports = runs["unchanged"] + runs[kind]
            uuids = [r["session_info"]["uuid"] for r in reports]
            history = _history(out / "var" / "results.db", uuids)
            print(f"{kind} from night k = {args.unchanged + 1} ({target} degraded):")
            print(f"  medians unchanged: {_levels(runs['unchanged'])}")
            print(f"  medians degraded:  {_levels(runs[kind])}")
            print("  " + _summary("fixed bands", _band_alarms(reports, args.calibration),
                                  args.unchanged, args.calibration, target))
            print("  " + _summary("change points", _change_alarms(history, args.calibration),
                                  args.unchanged, args.calibration, target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
