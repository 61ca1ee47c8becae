"""OSU and IMB parsers, and the values the checks derive, on real captured outputs.

The outputs are this project's own runs (tests/data/standard/README.md says how).
"""

import pytest

from sentinel.analysis import collectives
from sentinel.analysis.fits import hockney_fit, switch_points
from sentinel.analysis.standard import imb_values
from sentinel.errors import SentinelError
from sentinel.parsers import imb, osu
from tests.conftest import FIXTURES

OSU_FILES = sorted(FIXTURES.glob("osu-*/*.txt"))
IMB_FILES = sorted(FIXTURES.glob("imb-2021/*.txt"))
TRUNCATED = sorted((FIXTURES / "truncated").rglob("*.txt"))


def test_the_captured_outputs_are_there():
    assert len(OSU_FILES) == 56 and len(IMB_FILES) == 27 and len(TRUNCATED) == 3


@pytest.mark.parametrize("path", OSU_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_osu_fixture_parses_to_its_default_max_size(path):
    out = osu.parse(path.read_text(), str(path))
    # OSU's defaults: point-to-point up to 4 MiB, collectives up to 1 MiB.
    osu.require_sizes(out, 1048576 if path.name.startswith("allreduce") else 4194304, str(path))
    assert out.version.startswith(("5.3", "7.0"))
    assert all(v > 0 for v in out.column(out.columns[1].split()[0]).values())


@pytest.mark.parametrize("path", IMB_FILES, ids=lambda p: p.name)
def test_every_imb_fixture_parses_complete(path):
    out = imb.parse(path.read_text(), str(path))
    imb.require_complete(out, str(path))
    bench = {"pingpong": "PingPong", "pingping": "PingPing",
             "allreduce": "Allreduce"}[path.name.split("_")[0]]
    table = out.table(bench, processes=2)
    assert max(table.column(table.time_column)) == 4194304


def test_osu7_validation_and_full_format_columns():
    text = ("# OSU MPI Latency Test v7.0\n"
            "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations  "
            "Validation\n"
            "1                       0.50              0.40              0.90        1000  Pass\n"
            "2                       0.51              0.41              0.91        1000  Fail\n")
    out = osu.parse(text)
    assert out.column("Min Latency") == {1: 0.40, 2: 0.41}
    with pytest.raises(SentinelError, match=r"data validation failed at sizes \[2\]"):
        osu.require_sizes(out, 2)


def test_osu_truncated_and_garbled_outputs_are_named():
    text = (FIXTURES / "osu-5.3" / "latency_openmpi_ob1-vader.txt").read_text()
    cut = "\n".join(text.splitlines()[:10])
    with pytest.raises(SentinelError, match=r"x: OSU Latency is truncated: last size 64, "
                                            r"expected up to 4194304"):
        osu.require_sizes(osu.parse(cut, "x"), 4194304, "x")
    with pytest.raises(SentinelError, match=r"x:6: OSU Latency: expected 2 columns"):
        osu.parse(text.replace("4                       0.17", "4"), "x")
    with pytest.raises(SentinelError, match=r"x:4: OSU Latency: Latency \(us\)='nan\?'"):
        osu.parse(text.replace("1                       0.37", "1  nan?"), "x")
    with pytest.raises(SentinelError, match="x: not an OSU output"):
        osu.parse("Segmentation fault\n", "x")


def test_imb_truncated_and_missing_tables_are_named():
    text = (FIXTURES / "imb-2021" / "pingpong_openmpi_ob1-vader.txt").read_text()
    cut = text[:text.index("       65536")]
    with pytest.raises(SentinelError, match=r"x: IMB output is truncated: no '# All processes "
                                            r"entering MPI_Finalize' line \(last table: "
                                            r"PingPong at 2 processes, last size 32768\)"):
        imb.require_complete(imb.parse(cut, "x"), "x")
    with pytest.raises(SentinelError, match=r"IMB output has no Bcast table \(has: PingPong@2\)"):
        imb.parse(text).table("Bcast")
    with pytest.raises(SentinelError, match="x: not an IMB output"):
        imb.parse("mpirun: command not found\n", "x")


def test_imb_values_from_real_pingpong_and_allreduce():
    pp = imb.parse((FIXTURES / "imb-2021" / "pingpong_openmpi_ob1-tcp.txt").read_text())
    values, switches = imb_values(pp, ["PingPong"])
    assert values["pingpong_latency_8B"] == (6.49, "us")  # as printed in the file
    assert values["pingpong_bw_peak"][1] == "MB/s" and values["pingpong_bw_peak"][0] > 5000
    assert "pingpong_latency_4194304B" in values and "pingpong_bw_1024B" in values
    assert switches == [65536]  # Open MPI's tcp eager limit
    ar = imb.parse((FIXTURES / "imb-2021" / "allreduce_mpich_ucx-sm.txt").read_text())
    values, _ = imb_values(ar, ["Allreduce"])
    assert set(values) == {"allreduce_latency_8B", "allreduce_latency_4194304B"}


COLLECTIVES = FIXTURES.parent / "collectives"


def test_imb_series_of_process_counts_gives_a_value_per_count():
    out = imb.parse((COLLECTIVES / "imb-intelmpi-ofi-tcp-net-4nodes.out").read_text())
    imb.require_complete(out)
    ops = list(collectives.OPERATIONS)
    collectives.require_counts(out, ops, [1, 2, 4], "x")
    values = collectives.values(out, ops, [8, 65536], 2.0)
    assert set(values) == set(collectives.expected(ops, [8, 65536], [1, 2, 4]))
    assert values["barrier_latency_P4"] == (56.69, "us")  # t_avg as printed
    assert values["alltoallv_latency_65536B_P2"][0] > values["alltoallv_latency_8B_P2"][0]
    with pytest.raises(SentinelError, match=r"x: IMB ran Barrier at \[1, 2, 4\] process "
                                            r"counts, the series is \[1, 2, 3\]"):
        collectives.require_counts(out, ops, [1, 2, 3], "x")
    three = imb.parse((COLLECTIVES / "imb-intelmpi-ofi-tcp-net-3nodes-busypoll.out").read_text())
    collectives.require_counts(three, ["Barrier", "Allreduce", "Alltoall"], [1, 2, 3], "x")


def test_a_size_imb_gave_up_on_is_unresolved_never_a_value():
    out = imb.parse((COLLECTIVES / "imb-intelmpi-ofi-tcp-net-4nodes-busypoll-timeout.out")
                    .read_text())
    imb.require_complete(out)
    table = out.table("Allreduce", 4)
    assert table.cut_at == 16 and sorted(table.column("t_avg[usec]")) == [8]
    values = collectives.values(out, ["Barrier", "Allreduce"], [8, 16], 0.05)
    assert "allreduce_latency_8B_P4" in values and "allreduce_latency_16B_P4" not in values
    assert values.unresolved == {"allreduce_latency_16B_P4": (
        "IMB stopped timing Allreduce at 4 processes from 16 B on: its time budget "
        "(-time 0.05 s per size) was spent, so the time per call is above what that "
        "budget allows")}


def test_osu_outputs_of_a_series_split_per_launch_and_give_a_value_per_count():
    one = (FIXTURES / "osu-7.0" / "allreduce_openmpi_ob1-vader.txt").read_text()
    two = (FIXTURES / "osu-5.3" / "allreduce_openmpi_ob1-tcp.txt").read_text()
    text = "SENTINEL_CONFIG bench=affinity ranks=2\n" + one + "noise\n" + two
    chunks = osu.split(text)
    assert len(chunks) == 2 and chunks[0].lstrip("\n").startswith("# OSU MPI Allreduce")
    # each keeps its lines' numbers in the job output: an error names the right one
    lines = chunks[1].splitlines()
    row = lines.index(two.splitlines()[3])  # osu-5.3's first row, the 4-byte one
    lines[row] += " 1.0"
    with pytest.raises(SentinelError, match=f"^out:{row + 1}: OSU"):
        osu.parse("\n".join(lines), "out")
    assert text.splitlines()[row] == two.splitlines()[3]
    tables = {2: osu.parse(chunks[0]), 4: osu.parse(chunks[1])}
    values = collectives.osu_values(tables, "osu_allreduce", [8, 65536])
    assert set(values) == set(collectives.osu_expected("osu_allreduce", [8, 65536], [2, 4]))
    assert values["allreduce_latency_8B_P2"] == (tables[2].column("Avg Latency")[8], "us")
    assert osu.split("no OSU here\n") == []


@pytest.mark.parametrize("path,step", [
    ("osu-5.3/latency_openmpi_ob1-vader.txt", 4096),   # vader eager limit 4 KiB
    ("osu-7.0/latency_openmpi_ob1-tcp.txt", 65536),    # tcp eager limit 64 KiB
])
def test_fit_and_switch_points_on_osu_curves(path, step):
    times = osu.parse((FIXTURES / path).read_text()).column("Latency")
    fit = hockney_fit(times)
    assert fit.lambda_us == pytest.approx(sum(times[s] for s in (0, 1, 2, 4, 8, 16)) / 6)
    assert fit.b_mbs > 1000
    # The protocol step is found; small-message noise on a shared VM may add
    # another below 64 B (0.17 -> 0.39 us at 32 B in the vader capture).
    found = switch_points(times, fit)
    assert step in found and all(s < 64 for s in found if s != step)


def test_osu_values_per_kind_on_real_outputs():
    from sentinel.analysis.standard import osu_values
    lat = osu.parse((FIXTURES / "osu-5.3" / "latency_openmpi_ob1-vader.txt").read_text())
    values, switches = osu_values(lat, "osu_latency")
    assert values["latency_8B"] == (0.17, "us")  # as printed in the file
    assert values["latency_4194304B"] == (442.43, "us")
    assert {"fit_lambda", "fit_bw", "latency_0B"} <= set(values) and 4096 in switches
    bw = osu.parse((FIXTURES / "osu-7.0" / "bw_openmpi_ucx-sm.txt").read_text())
    values, _ = osu_values(bw, "osu_bw")
    assert values["bw_peak"] == (max(bw.column("Bandwidth").values()), "MB/s")
    assert "bw_4194304B" in values
    ar = osu.parse((FIXTURES / "osu-7.0" / "allreduce_mpich_ucx-sm.txt").read_text())
    assert set(osu_values(ar, "osu_allreduce")[0]) == {"latency_8B", "latency_1048576B"}


def test_osu_barrier_and_message_rate_formats():
    # The shapes OSU 7.0 prints for these two (no Size column; two value columns).
    from sentinel.analysis.standard import osu_values
    barrier = osu.parse("# OSU MPI Barrier Latency Test v7.0\n# Avg Latency(us)\n"
                        "             0.21\n")
    assert osu_values(barrier, "osu_barrier")[0] == {"latency": (0.21, "us")}
    mbw = osu.parse("# OSU MPI Multiple Bandwidth / Message Rate Test v7.0\n"
                    "# [ pairs: 1 ] [ window size: 64 ]\n"
                    "# Size                  MB/s        Messages/s\n"
                    "1                       8.08        8075057.66\n"
                    "2                      16.65        8324845.89\n")
    values, _ = osu_values(mbw, "osu_mbw_mr")
    assert values == {"bw_peak": (16.65, "MB/s"), "msg_rate_peak": (8324845.89, "messages/s")}


def test_osu_options_work_with_every_version():
    from sentinel.analysis.standard import osu_options
    assert osu_options("osu_latency", 4194304, 1048576, 0, 0) == []  # 5.x: no -m
    assert osu_options("osu_latency", 65536, 1048576, 100, 10) == [
        "-m", "65536", "-i", "100", "-x", "10"]
    assert osu_options("osu_allreduce", 4194304, 1048576, 0, 0) == ["-m", "1048576"]
    assert osu_options("osu_mbw_mr", 4194304, 1048576, 100, 10) == []
    assert osu_options("osu_barrier", 4194304, 1048576, 100, 0) == []


@pytest.mark.parametrize("path", TRUNCATED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_outputs_of_killed_runs_are_called_truncated(path):
    text = path.read_text()
    with pytest.raises(SentinelError, match="truncated"):
        if path.parent.name.startswith("osu"):
            osu.require_sizes(osu.parse(text, str(path)), 4194304, str(path))
        else:
            imb.require_complete(imb.parse(text, str(path)), str(path))
