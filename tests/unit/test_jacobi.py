"""The Jacobi model of Banerjee (2022) and the benchmark output, on published and real numbers."""

from __future__ import annotations

import dataclasses

import pytest

from sentinel.analysis.jacobi import (
    analyse,
    comm_time,
    efficiency,
    grid_ranks,
    halo_bytes,
    model_mlups,
    model_values,
    values,
)
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import parse, split_launches, unsupported
from sentinel.rfm.scaling import rank_series
from tests.conftest import DATA

CAPTURED = DATA / "jacobi-openmpi-funnelled-2x1.out"


def test_seed_003_thin_by_core_row():
    # THIN, by core, N = 4, 2k = 4, L = 1200, T_s = 15.327 s, B = 6240.607 MB/s, T_L = 0.198 us
    assert halo_bytes(1200, 2) == pytest.approx(46.08e6)
    assert comm_time(1200, 2, 6240.607, 0.198) == pytest.approx(0.00738, abs=5e-6)
    # Banerjee (2022) prints T_s rounded to 15.327 s; 450.763 implies T_s + T_c = 15.3340 s,
    # i.e. T_s = 15.3266 s. The rounding alone moves P by 0.011 MLUP/s (2.5e-5).
    assert model_mlups(1200, 4, 2, 15.327, 6240.607, 0.198) == pytest.approx(450.763, rel=5e-5)


def test_seed_003_single_process_rate():
    # P(L,1) = L^3 / T_s: the study's measured 112.737 MLUP/s, within T_s's rounding
    assert model_mlups(1200, 1, 0, 15.327, 6240.607, 0.198) == pytest.approx(112.737, rel=5e-5)


@pytest.mark.parametrize("args,message", [
    ((1200, 4, 2, 0.0, 6240.607, 0.198), "T_s = 0.0 s is not positive"),
    ((1200, 4, 2, 15.327, 0.0, 0.198), "bandwidth B = 0.0 MB/s is not positive"),
])
def test_model_refuses_impossible_inputs(args, message):
    with pytest.raises(SentinelError, match=message):
        model_mlups(*args)


def test_captured_run_gives_phases_and_rate():
    run = analyse(parse(CAPTURED.read_text(), "jacobi"), str(CAPTURED))
    assert (run.ranks, run.threads, run.mode, run.local, run.k) == (2, 1, "funnelled",
                                                                    (64, 64, 64), 1)
    # the mean of the three repetitions, per iteration
    assert run.phases["jacobi"] == pytest.approx((8.847579e-3 + 6.671611e-3 + 6.685255e-3) / 30)
    # the sweep: the median of the three, with their range, which covers the
    # median of the sweep time with probability 1 - 2^(1-3) = 75 %, said so
    sweep = 1.546377e-03
    assert run.sweep_s == pytest.approx(sweep)
    assert run.sweep_interval_s == (1.546100e-03, 1.568029e-03) and run.coverage == 0.75
    assert run.mlups == pytest.approx(64 ** 3 * 2 / sweep / 1e6)
    vals = values(run)
    assert set(vals) == {"t_jacobi_N2", "t_halo_N2", "t_delta_N2", "t_other_N2",
                         "t_sweep_N2", "mlups_N2"}
    assert vals["mlups_N2"][1] == "MLUP/s"
    assert vals.coverage == {"t_sweep_N2": 0.75, "mlups_N2": 0.75}


def test_model_ratio_of_captured_run():
    run = analyse(parse(CAPTURED.read_text(), "jacobi"), str(CAPTURED))
    vals = model_values(run, single_sweep_s=1.2e-3, bandwidth_mbs=5000.0, latency_us=0.2)
    model = 64 ** 3 * 2 / (1.2e-3 + 64 * 64 * 2 * 8 / 5e9 + 0.2e-6) / 1e6
    assert vals["model_mlups_N2"][0] == pytest.approx(model)
    assert vals["model_ratio_N2"][0] == pytest.approx(run.mlups / model)


def test_missing_repetition_is_named():
    text = "\n".join(ln for ln in CAPTURED.read_text().splitlines()
                     if not ln.startswith("SENTINEL_JACOBI rep=2"))
    with pytest.raises(SentinelError, match="2 SENTINEL_JACOBI lines for 3 repetitions"):
        analyse(parse(text, "jacobi"), "out.txt")


def test_unsupported_thread_level_is_a_reason():
    text = ("SENTINEL_UNSUPPORTED bench=jacobi mode=multiple required=MPI_THREAD_MULTIPLE "
            "provided=MPI_THREAD_FUNNELED\n")
    assert unsupported(parse(text, "jacobi")) == (
        "mode multiple needs MPI_THREAD_MULTIPLE; the MPI library provides MPI_THREAD_FUNNELED")
    assert unsupported(parse(CAPTURED.read_text(), "jacobi")) is None


SERIES = DATA / "jacobi-openmpi-multiple-strong-series.out"


def test_rank_series():
    assert rank_series(1, 1) == [1]
    assert rank_series(6, 1) == [1, 2, 4, 6]  # the whole node, not only powers of two
    assert rank_series(4, 1) == [1, 2, 4] and rank_series(1, 3) == [1, 2, 3]
    assert rank_series(128, 64)[-1] == 8192 and len(rank_series(128, 64)) == 14
    # a node of 96 cores: within it 1 ... 64, then whole nodes 96, 192, 384, 480
    assert rank_series(96, 5) == [1, 2, 4, 8, 16, 32, 64, 96, 192, 384, 480]
    assert rank_series(96, 5, whole_nodes=True) == [96, 192, 384, 480]
    assert rank_series(4, 4, limit=6) == [1, 2, 4, 6]  # max_ranks: below it, and it
    assert rank_series(2, 2, limit=8) == [1, 2, 4, 8]  # beyond (oversubscribed)


def test_a_process_grid_is_three_counts_that_agree_with_max_ranks():
    assert grid_ranks([16, 4, 2], 0) == 128 and grid_ranks([3, 1, 1], 3) == 3
    with pytest.raises(SentinelError, match=r"JacobiCheck.dims=2,2: a process grid is three "
                                            r"positive counts \(16,4,2\)"):
        grid_ranks([2, 2], 0)
    with pytest.raises(SentinelError, match=r"dims=2,0,2: a process grid"):
        grid_ranks([2, 0, 2], 0)
    with pytest.raises(SentinelError, match=r"JacobiCheck.dims=2,2,2 is 8 ranks, "
                                            r"JacobiCheck.max_ranks is 6"):
        grid_ranks([2, 2, 2], 6)


def test_series_split_per_launch_and_strong_efficiency():
    runs = split_launches(parse(SERIES.read_text(), "jacobi"), "out", [1, 2])
    results = {n: analyse(run, "out") for n, run in runs.items()}
    eff = efficiency(results[2], results[1])["efficiency_N2"][0]
    assert eff == pytest.approx(results[1].sweep_s / (2 * results[2].sweep_s))


def test_missing_launch_is_named():
    with pytest.raises(SentinelError, match=r"no output from the 4-rank launch \(found "
                                            r"launches of \[1, 2\]\)"):
        split_launches(parse(SERIES.read_text(), "jacobi"), "out", [1, 2, 4])


def test_truncated_launch_is_named():
    lines = SERIES.read_text().splitlines()
    cut = "\n".join(lines[:-2])  # the 2-rank launch loses its last result and DONE
    with pytest.raises(SentinelError, match=r"out \(2-rank launch\): output of jacobi is "
                                            "truncated"):
        split_launches(parse(cut, "jacobi"), "out", [1, 2])


def test_strong_results_must_agree():
    runs = split_launches(parse(SERIES.read_text(), "jacobi"), "out", [1, 2])
    one, two = (analyse(run, "out") for run in runs.values())
    wrong = dataclasses.replace(two, checksum=two.checksum * 1.001)
    with pytest.raises(SentinelError, match="2-rank result .* differs from the 1-rank result"):
        efficiency(wrong, one)


def test_the_series_keeps_the_launches_whose_grids_fit_a_node():
    from sentinel.analysis.jacobi import fitting_series, grid_bytes_per_core

    # the Orfeo study's L = 1200: two 1202^3 grids of doubles, 27.8 GB a rank
    assert grid_bytes_per_core(1200) == 2 * 1202**3 * 8
    gib = 2**30
    # 24 cores a node of 512 GiB (495 GB for grids): 16 ranks (445 GB) fit, 24 (667 GB) not
    assert fitting_series([1, 2, 4, 8, 16, 24], 24, 1, 1200, 512 * gib) == [1, 2, 4, 8, 16]
    assert fitting_series([1, 2, 4, 8, 12], 24, 1, 1200, 24 * gib) == []
    # mapping node: one rank a node, whatever N
    assert fitting_series([1, 2, 4], 1, 1, 1200, 64 * gib) == [1, 2, 4]
    # a rank of 4 threads holds 4 cores' shares
    assert fitting_series([1, 2], 2, 4, 600, 24 * gib) == [1]
