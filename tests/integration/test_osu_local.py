"""OSU checks for real, where an OSU build for this host's MPI is named."""

import os

import pytest

from tests.integration.conftest import need_stack, reframe

pytestmark = pytest.mark.integration

OSU_OPENMPI = os.environ.get("SENTINEL_OSU_OPENMPI", "")


def test_osu_is_listed_for_every_benchmark(tmp_path):
    need_stack("openmpi")
    run = reframe(["-n", "OsuCheck", "-l"], tmp_path, checks=("osu.py",))
    for program in ("osu_latency", "osu_bw", "osu_bibw", "osu_mbw_mr", "osu_allreduce",
                    "osu_bcast", "osu_alltoall", "osu_barrier"):
        assert f"%benchmark_info={program}" in run.output


def test_osu_without_binaries_is_skipped_with_where_it_looked(tmp_path):
    need_stack("openmpi")
    run = reframe(["-n", "OsuCheck.*transport=ob1-vader.*osu_latency", "-p", "openmpi$",
                   "-r"], tmp_path, env={"SENTINEL_OSU_OPENMPI": str(tmp_path / "none")},
                  checks=("osu.py",))
    tc = run.case("OsuCheck", environ="openmpi", transport="ob1-vader", mapping="core")
    assert tc["result"] == "skip"
    assert f"osu_latency not found for environment openmpi (looked in: {tmp_path}/none" \
        in run.output


@pytest.mark.skipif(not OSU_OPENMPI, reason="no OSU build for Open MPI: set "
                    "SENTINEL_OSU_OPENMPI to its install prefix or build tree (OSU sources "
                    "are not in any registry CI can reach)")
def test_osu_runs_for_real(tmp_path):
    need_stack("openmpi")
    run = reframe(["-n", "OsuCheck", "-S", "time_limit=2m", "-E",
                   "transport == 'openmpi/ob1-vader' and mapping == 'core' and "
                   "benchmark_info[0] in ('osu_latency', 'osu_bw')", "-p", "openmpi$",
                   "-S", "OsuCheck.max_size=65536", "-r"], tmp_path, checks=("osu.py",))
    for program, var in (("osu_latency", "latency_8B"), ("osu_bw", "bw_peak")):
        tc = run.case("OsuCheck", environ="openmpi", transport="ob1-vader", mapping="core",
                      benchmark_info=program)
        assert tc["result"] == "pass", tc.get("fail_reason")
        assert tc["perfvalues"][f"local:cpu:{var}"][0] > 0
        assert "btl=vader" in tc["transport_selected"]
