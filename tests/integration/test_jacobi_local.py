"""The hybrid Jacobi for real: every mode that fits this host's 2 cores, on
each MPI (the quick mode's transports), with the model from the measured
ping-pong of the same environment, transport and mapping."""

from __future__ import annotations

import math
import re

import pytest

from tests.integration.conftest import need_stack

pytestmark = pytest.mark.integration

TRANSPORT = {"openmpi": "ob1-vader", "mpich": "ucx-sm", "intelmpi": "shm"}
# This host's one socket is one NUMA domain: threads=numa and threads=socket
# are the node (2 cores), measured as threads=node.
POINTS = [("pure", "one"), ("master", "one"), ("master", "node"), ("funnelled", "one"),
          ("funnelled", "node"), ("multiple", "one"), ("multiple", "node")]


def _perf(tc: dict) -> dict[str, float]:
    return {k.split(":")[-1]: v[0] for k, v in tc["perfvalues"].items()}


@pytest.mark.parametrize("family", sorted(TRANSPORT))
@pytest.mark.parametrize("mode,threads", POINTS)
def test_every_mode_runs_with_phases_and_model(quick_matrix, family, mode, threads):
    need_stack(family)
    tc = quick_matrix.case("JacobiCheck", environ=family, transport=TRANSPORT[family],
                           mapping="core", mode=mode, threads=threads)
    assert tc["result"] == "pass", tc.get("fail_reason")
    perf = _perf(tc)
    series = [1, 2] if threads == "one" else [1]  # ranks x threads within 2 cores
    for n in series:
        for phase in ("jacobi", "halo", "delta", "other", "sweep"):
            assert f"t_{phase}_N{n}" in perf
        assert perf[f"mlups_N{n}"] > 0
        assert 0 < perf[f"model_ratio_N{n}"] < 10
    assert f"mlups_N{series[-1] * 2}" not in perf
    # N = 1 is its own model: P(L,1) = L^3 / T_s
    assert perf["model_ratio_N1"] == pytest.approx(1.0, rel=1e-9)
    if threads == "one":
        assert perf["t_halo_N2"] > 0 and perf["t_halo_N1"] < perf["t_halo_N2"]


def test_modes_and_libraries_compute_the_same_result(quick_matrix):
    sums: dict[int, set[str]] = {}
    for family in TRANSPORT:
        if family not in {tc["environ"] for tc in quick_matrix.cases("JacobiCheck")}:
            continue
        for mode, threads in POINTS:
            tc = quick_matrix.case("JacobiCheck", environ=family, transport=TRANSPORT[family],
                                   mapping="core", mode=mode, threads=threads)
            for item in tc["checksums"].split(","):
                n, value = item.split(":")
                sums.setdefault(int(n), set()).add(value)
    assert sums, "no Jacobi results"
    for n, values in sums.items():
        floats = [float(v) for v in values]
        assert all(math.isclose(f, floats[0], rel_tol=1e-12) for f in floats), (n, values)


def test_model_inputs_come_from_the_pt2pt_dependency(quick_matrix):
    need_stack("openmpi")
    tc = quick_matrix.case("JacobiCheck", environ="openmpi", transport="ob1-vader",
                           mapping="core", mode="pure", threads="one")
    pt2pt = _perf(quick_matrix.case("Pt2ptCheck", environ="openmpi", transport="ob1-vader",
                                    mapping="core"))
    perf = _perf(tc)
    edge = 64  # the quick mode's JacobiCheck.local_size
    t_c = edge * edge * 1 * 2 * 8 / (pt2pt["fit_bw"] * 1e6) + pt2pt["fit_lambda"] * 1e-6
    model = edge ** 3 * 2 / (perf["t_sweep_N1"] + t_c) / 1e6
    assert perf["model_mlups_N2"] == pytest.approx(model, rel=1e-6)


def test_jacobi_reaches_the_perflog(quick_matrix):
    need_stack("openmpi")
    logs = list(quick_matrix.out.glob("reports/perflogs/*/*/JacobiCheck.log"))
    assert logs, "no JacobiCheck perflog"
    text = logs[0].read_text()
    assert "model_ratio_N2=" in text and "t_halo_N2=" in text
    # where the reference came from, or why there is none (docs/references.md)
    assert re.search(r"\|(pass|fail)\|no reference file: \S+local\.yaml does not exist; "
                     r"(no )?learnt baseline", text), text[-500:]


def test_a_size_that_does_not_fit_this_host_is_skipped_naming_the_memory(tmp_path):
    import os

    from sentinel.analysis.jacobi import grid_bytes_per_core
    from tests.integration.conftest import reframe

    need_stack("openmpi")
    # the smallest L whose two grids take more than this host's memory (the
    # Orfeo study's L = 1200, 27.8 GB a rank, on a host under 31 GiB)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    edge = round((memory / 16) ** (1 / 3))
    while grid_bytes_per_core(edge) <= memory:
        edge += 1
    run = reframe(["-n", "^JacobiCheck.*ob1-vader.*%mapping=core.*pure.*one", "-p", "openmpi$",
                   "-S", f"JacobiCheck.local_size={edge}", "--dry-run"], tmp_path,
                  checks=("pt2pt.py", "jacobi.py"))
    assert re.search(rf"L = {edge} takes [\d.]+ GB a core; a node of partition local:cpu has "
                     r"[\d.]+ GiB, 90% of it for the grids: no launch fits", run.output), \
        run.output[-2000:]
