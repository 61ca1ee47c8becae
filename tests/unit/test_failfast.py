"""Ranks that share a CPU stop the suite's benchmarks before measuring (--distinct-cpus).

Offline: which checks pass the option to their benchmark, how the parser
reads the benchmark's error line, and a real failing job's outputs judged
by the check's sanity.
"""

from __future__ import annotations

import re
import shutil

import pytest
from reframe.core.exceptions import SanityError

from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import describe_error, parse, require_complete
from tests.conftest import DATA
from tests.offline import Case, Offline, offline_runtime

OB1 = {"transport": "openmpi/ob1-vader", "mapping": "core"}
SHARED = DATA / "failfast" / "pt2pt-openmpi-ob1-vader-core-cpu0"
LINE = "SENTINEL_ERROR bench=pt2pt what=shared_cpus host=vm ranks=0,1 cpus=0"


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("failfast")
    with offline_runtime(prefix):
        yield Offline(prefix)


def one(offline: Offline, check: str, partition: str = "cpu", variables=None,
        **params) -> Case:
    cases = offline.cases([(check, params)], variables=variables, environ="openmpi",
                          partition=partition)
    assert len(cases) == 1, [c.check.name for c in cases]
    return cases[0]


def bench_lines(case: Case) -> list[str]:
    """The script's lines that launch the check's benchmark."""
    exe = case.check.executable
    return [ln for ln in case.script().splitlines() if exe in ln and not ln.startswith("ldd")]


@pytest.mark.parametrize("check,params", [
    ("Pt2ptCheck", {}),
    ("MatchingCheck", {}),
    ("HybridCheck", {"mode": "funnelled", "threads": "one"}),
])
def test_ranks_on_one_node_must_prove_distinct_cpus(offline, check, params):
    case = one(offline, check, **params, **OB1)
    lines = bench_lines(case)
    assert lines and all(ln.endswith(" --distinct-cpus") for ln in lines), lines


def test_every_launch_of_the_jacobi_series_proves_it(offline):
    _, case = offline.cases([("Pt2ptCheck", OB1),  # weak scaling's dependency
                             ("JacobiCheck", {"mode": "pure", "threads": "one", **OB1})],
                            environ="openmpi")
    lines = bench_lines(case)
    assert len(lines) == 2 and all(" --distinct-cpus" in ln for ln in lines), lines


def test_one_rank_per_node_needs_no_proof(offline):
    case = one(offline, "Pt2ptCheck", partition="cluster", transport="openmpi/ob1-tcp",
               mapping="node")
    lines = bench_lines(case)
    assert lines and not any("--distinct-cpus" in ln for ln in lines), lines


def test_asked_oversubscription_is_not_refused(offline):
    case = one(offline, "HybridCheck", mode="funnelled", threads="node",
               variables={"oversubscribe": True}, **OB1)
    assert case.skipped is None, case.skipped
    lines = bench_lines(case)
    assert lines and not any("--distinct-cpus" in ln for ln in lines), lines


def test_shared_cpus_line_is_an_error_naming_them():
    out = parse(f"{LINE}\n", "pt2pt")
    assert [r.kind for r in out.records] == ["ERROR"]
    assert describe_error(out.records[0]).startswith(
        "ranks 0 and 1 share CPU(s) 0 on host vm; the benchmark stopped before measuring")
    with pytest.raises(SentinelError, match=re.escape(
            "rfm_job.out:1: benchmark reported an error: ranks 0 and 1 share CPU(s) 0 on "
            "host vm; the benchmark stopped before measuring (bench=pt2pt what=shared_cpus "
            "host=vm ranks=0,1 cpus=0)")):
        require_complete(out, "rfm_job.out")


def test_unreadable_affinity_is_named():
    out = parse("SENTINEL_ERROR bench=matching what=affinity_unknown host=n1 rank=3\n",
                "matching")
    with pytest.raises(SentinelError, match="rank 3 on host n1 cannot read its CPU affinity"):
        require_complete(out, "rfm_job.out")


def test_failed_job_of_ranks_on_cpu_0_names_the_cpu(offline):
    """The outputs of the real run of tests/config/failfast.py (see tests/data/failfast)."""
    case = one(offline, "Pt2ptCheck", **OB1)
    for path in SHARED.iterdir():
        shutil.copy(path, case.stagedir / path.name)
    with pytest.raises(SanityError) as err:
        case.sanity()
    reason = str(err.value)
    assert "ranks 0 and 1 share CPU(s) 0 on host vm" in reason
    assert "hit its time limit" not in reason and "truncated" not in reason
