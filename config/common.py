"""Settings shared by every system: output locations, logging, modes, storage.

Generated files go under ``$SENTINEL_OUTPUT`` (default: the checkout):
run reports and perflogs in ``reports/``, stage and output directories and
the results database in ``var/``.
"""

import os
import shlex
import sys
from pathlib import Path

from sentinel.rfm.compat import cmdline

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = Path(os.environ.get("SENTINEL_OUTPUT", ROOT))
REPORTS = OUTPUT / "reports"
VAR = OUTPUT / "var"
VAR.mkdir(parents=True, exist_ok=True)  # ReFrame does not create the log directory

#: Each MPI's shared-memory transport, the quick mode's one for the costly
#: sweeps: Open MPI 4's vader, Open MPI 5's sm, MPICH's and Intel MPI's own.
_SHM = "openmpi/ob1-vader,openmpi/ob1-sm,mpich/ucx-sm,intelmpi/shm"
#: Scaled-down parameters: the whole local matrix in a few minutes.
QUICK = [
    "-S", "MatchingCheck.lengths=10",
    "-S", "MatchingCheck.budget=1",
    "-S", "MatchingCheck.repetitions=3",
    "-S", "ImbCheck.msglog=20",
    "-S", "ImbCheck.iterations=100",
    "-S", "ImbCheck.time_per_size=0.5",
    "-S", f"CollectivesCheck.transports={_SHM}",
    "-S", "CollectivesCheck.iterations=100",
    "-S", "CollectivesCheck.time_per_size=0.5",
    "-S", "Pt2ptCheck.max_size=1048576",
    "-S", "Pt2ptCheck.iterations=100",
    "-S", "Pt2ptCheck.iterations_large=10",
    "-S", "Pt2ptCheck.windows=20",
    "-S", "Pt2ptCheck.windows_large=5",
    "-S", "Pt2ptCheck.repetitions=5",
    "-S", "Pt2ptCheck.warmup=10",
    # every byte of 2 untimed messages a size and direction checked (the
    # nightly checks 10): a corrupting path fails the smoke run too
    "-S", "Pt2ptCheck.verify=2",
    # the same sweep for device buffers (a -S names a class, not its subclasses)
    *(x for var in ("max_size=1048576", "iterations=100", "iterations_large=10", "windows=20",
                    "windows_large=5", "repetitions=5", "warmup=10")
      for x in ("-S", f"Pt2ptGpuCheck.{var}")),
    "-S", f"JacobiCheck.transports={_SHM}",
    "-S", "JacobiCheck.local_size=64",
    "-S", "JacobiCheck.iterations=10",
    "-S", f"HybridCheck.transports={_SHM}",
    "-S", "HybridCheck.max_size=1024",
    "-S", "HybridCheck.target_time=0.05",
    "-S", f"HybridCollectivesCheck.transports={_SHM}",
    "-S", "HybridCollectivesCheck.max_collective=64",
    "-S", "HybridCollectivesCheck.target_time=0.02",
    "-S", f"BarrierSplitCheck.transports={_SHM}",
    "-S", "BarrierSplitCheck.target_time=0.05",
    # every one-sided path of every transport, at small sizes
    "-S", "RmaCheck.max_size=4096",
    "-S", "RmaCheck.iterations=20",
    "-S", "RmaCheck.windows=5",
    "-S", "RmaCheck.repetitions=3",
    "-S", "RmaCheck.warmup=2",
    # 8 operations a bandwidth epoch, 4 KiB at most: Intel MPI 2021.18 over
    # ofi:shm hangs in epochs of 4 or more accumulates of 8 KiB, IMB-RMA's
    # too (docs/transports.md, known issue)
    "-S", "RmaCheck.window=8",
    "-S", "ImbRmaCheck.msglog=12",
    "-S", "ImbRmaCheck.iterations=100",
    "-S", "ImbRmaCheck.time_per_size=0.5",
    # a third of a second a thread count, every transport
    "-S", "ThreadRateCheck.target_time=0.3",
    "-S", "ThreadRateCheck.repetitions=5",
    # the victims' 300 round trips and 4 MiB a stream, 3 times quiet and
    # loaded a congestor pattern: seconds a pattern on the rig's four nodes
    "-S", "CongestionCheck.samples=300",
    "-S", "CongestionCheck.repetitions=3",
    "-S", "CongestionCheck.bw_iterations=4",
    "-S", "CongestionCheck.burst=2",
    "-S", f"FabricCheck.transports={_SHM}",
    "-S", "FabricCheck.size=65536",
    "-S", "FabricCheck.iterations=5",
    "-S", "FabricCheck.latency_iterations=100",
    "-S", "time_limit=2m",
]

general = [{
    "check_search_path": [str(ROOT / "checks")],
    "report_file": str(REPORTS / "run-report-{sessionid}.json"),
    # the newest session as JUnit XML, for a CI system's test view (GitLab,
    # Jenkins): one test case per ReFrame test case, a failure with its reason
    "report_junit": str(REPORTS / "junit.xml"),
    "save_log_files": False,
}]

#: The last 7 nights (sessions run with --mode nightly), aggregated by median.
NIGHTLY_COMPARE = 'now-7d:now?mode=="nightly"/median:/+result'
RESULTS_DB = Path(os.environ.get("SENTINEL_RESULTS_DB", str(VAR / "results.db")))


def _nightly_report() -> list[str]:
    """The end-of-run table against past nights; none before the results database exists.

    On an empty history the comparison would be a row of ``<no data>`` per
    variable (704 rows here); the first night says there is no history
    instead. The database is not opened here: a database that holds sessions
    of other modes only gives its first night ReFrame's ``<no data>`` rows.
    """
    if RESULTS_DB.exists():
        # ReFrame shlex-splits mode options: the filter keeps its quotes.
        return [shlex.quote(f"--performance-report={NIGHTLY_COMPARE}")]
    if cmdline.mode() == "nightly":
        print(f"mpi-sentinel: no nightly history yet in {RESULTS_DB}: tonight's values are "
              "stored; from the next night on, the end-of-run table compares with the "
              "median of the last 7 nights", file=sys.stderr)
    return []


def _marked(mode: str) -> list[str]:
    """Each mode marks its sessions, and its test cases learn bands from those alone.

    The report compares a session with the one before it of the same mode,
    and ``sentinel baseline`` learns each test case's bands from the
    sessions of the mode it runs in (a quick run's values are not a night's).
    """
    return [f"--session-extras=mode={mode}", "-S", f"history_mode={mode}"]


modes = [
    # Smoke run on a small machine (make run, CI): the suite's own benchmarks
    # and IMB; OSU (one test per benchmark) runs in nightly and acceptance.
    # A value outside its band is measured again before its test case fails.
    {"name": "quick", "options": ["--tag", "nightly", "--exclude-tag", "osu",
                                "--exclude-tag", "source", *_marked("quick"),
                                "--max-retries=1", *QUICK]},
    # What a site runs every night: seed parameters, short message sizes. A
    # failed test is retried once (a transient slowdown does not repeat, a
    # regression does); the session is marked for comparisons with past
    # nights, and the end-of-run table compares with their median.
    {"name": "nightly", "options": [
        "--tag", "nightly",
        "--max-retries=1",
        *_marked("nightly"),
        # pt2pt, matching, RMA and the thread message rate on every transport and
        # mapping every night; the expensive sweeps (the mixed-mode threads,
        # Jacobi series, OSU, IMB) each within a week.
        "-S", "rotation=7",
        # One job per environment runs its transports one after another; each
        # transport keeps its own test case (sentinel.rfm.packing).
        "-S", "pack_transports=true",
        *_nightly_report(),
        "-S", "MatchingCheck.lengths=10,1000",
        # every byte of 10 untimed messages a size and direction checked where
        # it lands (after the timed samples): a link or RDMA path that delivers
        # wrong bytes fast fails the ping-pong, naming the pair and the size
        "-S", "Pt2ptCheck.verify=10",
        # 3 s a sweep: 12 sweeps, under 40 s a transport (10 s: 2 minutes)
        "-S", "MatchingCheck.budget=3",
        # The series over 2 nodes: every night within the node-hour budget;
        # the whole partition is the acceptance mode's.
        "-S", "JacobiCheck.max_nodes=2",
        "-S", "RingCheck.max_nodes=2",
        "-S", "CollectivesCheck.max_nodes=2",
        "-S", "HybridCollectivesCheck.nodes=2",
        # EPCC's collectives up to 64 KiB a thread: each mode within 5 minutes
        "-S", "HybridCollectivesCheck.max_collective=16384",
        "-S", "time_limit=10m",
        "-S", "HybridCollectivesCheck.time_limit=5m",
        # every one-sided sweep at the check's sizes took at most 3.2 minutes
        # on this project's 2-CPU machine (Open MPI 5 over TCP, its one-sided
        # emulated); 5 minutes a transport bounds it (9.1 node-hours a
        # partition of the 10-partition site at 10 minutes, 4.6 at 5)
        "-S", "RmaCheck.time_limit=5m",
        # a second a thread count (1, 2, 4, ... up to a socket's cores: 6
        # counts on a socket of 32) measures for well under a minute; 2
        # minutes a transport bounds it
        "-S", "ThreadRateCheck.time_limit=2m",
        # the congestion check on 8 nodes of a partition (2 victims, 6
        # congestors), each case on its night of the week (it rotates and is
        # never deferred); the whole partition in acceptance. It measures for
        # seconds on a real fabric (18 measurements of 2000 round trips and a
        # 16 MiB stream): 2 minutes a transport bounds it
        "-S", "CongestionCheck.nodes=8",
        "-S", "CongestionCheck.time_limit=2m",
        # the fabric's ring neighbours only (4 steps at any size); every pair
        # (2 (N-1) steps) in acceptance
        "-S", "FabricCheck.rounds=neighbours",
        # and 2 untimed messages a directed pair checked byte by byte after it
        "-S", "FabricCheck.verify=2",
        # a neighbours sweep measures for seconds: 2 minutes a launch bounds
        # it (64 nodes x 8 Open MPI transports: 21 node-hours before it is measured)
        "-S", "FabricCheck.time_limit=2m",
    ]},
    # Every node vetted: the node-local checks (matching, pt2pt and the
    # mixed-mode barrier on the core mapping) on every node of each selected
    # partition at once, one job per check and environment (each_node: one
    # launch held to each node; the transports packed one after another);
    # `sentinel report` and `sentinel vet` then name the nodes that failed.
    # ReFrame's --distribute=avail instead of -S each_node=true: one job per
    # node, check and transport.
    {"name": "vet", "options": [
        # (ReFrame splits a mode's options like a shell: no backslash, no space)
        "-n", "^(MatchingCheck|Pt2ptCheck|BarrierSplitCheck)[^A-Za-z].*%mapping=core([^a-z]|$)",
        "-x", "^BarrierSplitCheck.*%mode=(funnelled|multiple)",
        "-S", "each_node=true", "-S", "pack_transports=true", *_marked("vet"),
        # a node outside its bands is measured again before it is named
        "--max-retries=1",
        # Seconds a launch on a node, a subset of the nightly's sizes (their
        # bands apply): a launch still running at 30 s is itself a finding.
        "-S", "subset_of_references=true", "-S", "time_limit=30s",
        "-S", "MatchingCheck.lengths=10", "-S", "MatchingCheck.budget=1",
        "-S", "Pt2ptCheck.max_size=65536", "-S", "Pt2ptCheck.repetitions=5",
        "-S", "BarrierSplitCheck.target_time=0.2",
    ]},
    # The fabric pairs sweep alone, its ring neighbours (what `sentinel vet`
    # measures besides the vet mode): the slow nodes and links of a partition.
    {"name": "sweep", "options": [
        "-n", "^FabricCheck[^A-Za-z].*%mapping=node.*%mode=pairs",
        "-S", "FabricCheck.rounds=neighbours", *_marked("sweep"),
        # a neighbours sweep measures for seconds (as in the nightly)
        "-S", "FabricCheck.time_limit=2m",
    ]},
    # A node's health check in seconds (`sentinel health`, Slurm's
    # HealthCheckProgram), on a partition of the local scheduler: one
    # ping-pong to 64 B over each transport, verified and judged against the
    # partition's bands, and the host probe.
    {"name": "health", "options": [
        "-n", "^Pt2ptCheck[^A-Za-z].*%mapping=core([^a-z]|$)", *_marked("health"),
        "-S", "subset_of_references=true", "-S", "time_limit=20s",
        "-S", "Pt2ptCheck.max_size=64", "-S", "Pt2ptCheck.modes=standard",
        "-S", "Pt2ptCheck.iterations=1000", "-S", "Pt2ptCheck.windows=10",
        "-S", "Pt2ptCheck.repetitions=3", "-S", "Pt2ptCheck.warmup=100",
    ]},
    # Procurement acceptance: the sources' full parameters; a missing
    # reference fails. IMB up to 256 MiB as Banerjee (2022) ran it; the
    # matching thesis's (Song 2013) lengths 80 B to 8 MB (the check's
    # default) and its batch sizes n = 1 ... 90; the series over the whole
    # partition (the checks' default). A site adds its own (orfeo.py: the
    # study's Jacobi size).
    {"name": "acceptance", "options": [
        "--tag", "acceptance", "-S", "require_partition_reference=true",
        # a requirement outside its band is measured again before it fails
        "--max-retries=1", *_marked("acceptance"),
        "-S", "pack_transports=true",
        "-S", "ImbCheck.msglog=28",
        "-S", "MatchingCheck.batches=fixed",
    ]},
]

storage = [{
    "enable": True,
    # A site keeps the history on a shared path: SENTINEL_RESULTS_DB=/path/results.db
    "sqlite_db_file": str(RESULTS_DB),
}]

def _logger_level() -> str:
    """The most detailed level a handler takes: the file's (verbose), or the console's.

    ReFrame's default logger level lets every record through to the
    handlers, and it fills each record's check fields before a handler can
    drop it: at site scale, debug records nobody keeps cost a third of a
    dry-run. ``-vv`` and ``-vvv`` still get the console their debug output.
    A listing or a dry-run keeps no verbose record in its log file.
    """
    first = "info" if cmdline.writes_nothing() else "verbose"
    return [first, "verbose", "debug", "debug2"][min(cmdline.verbosity(), 3)]


logging = [{
    "level": _logger_level(),
    "perflog_multiline": True,
    "handlers": [
        {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
        # A listing or a dry-run has nothing to diagnose: its lines (27,308
        # for listing the tests/config/big_site.py site; 29,764 records of its
        # nightly's dry-run, 21 of 371 s under cProfile) stay out of the log file.
        {"type": "file", "name": str(VAR / "reframe.log"),
         "level": "warning" if cmdline.writes_nothing() else "verbose",
         "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
         "append": True},
    ],
    "handlers_perflog": [{
        "type": "filelog",
        "prefix": "%(check_system)s/%(check_partition)s",
        "level": "info",
        "basedir": str(REPORTS / "perflogs"),
        "format": (
            "%(check_job_completion_time)s|%(check_display_name)s|"
            "%(check_environ)s|%(check_perf_var)s=%(check_perf_value)s %(check_perf_unit)s|"
            "ref=%(check_perf_ref)s (l=%(check_perf_lower_thres)s, "
            "u=%(check_perf_upper_thres)s)|%(check_result)s|%(check_reference_status)s"
        ),
        "append": True,
    }],
}]

