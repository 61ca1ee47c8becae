import pytest

from sentinel.analysis.matching import analyse
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import parse, require_complete
from tests.conftest import DATA

REAL = (DATA / "matching_openmpi_ob1-vader.out").read_text()
# The nightly parameters (lengths 10 and 1000 doubles, adaptive batches) on
# this 2-core host, captured as tests/data/checks/README.md says.
UCX = (DATA / "matching_openmpi_ucx-sm.out").read_text()
MPICH = (DATA / "matching_mpich_ucx-sm.out").read_text()
TCP = (DATA / "matching_openmpi_ob1-tcp.out").read_text()


def test_real_output_parses_completely():
    out = parse(REAL, "matching")
    require_complete(out, "rfm_job.out")
    assert len(out.of("AFFINITY")) == 2
    # 2 algorithms x 3 patterns x 2 lengths, each an adaptive sweep: its
    # doubling probes, then a grid of 8 sizes and the check-point n = 45
    assert len(out.of("MATCH_SWEEP")) == 12
    for sweep in out.of("MATCH_SWEEP"):
        n_max = sweep.integer("n_max")
        grid = {max(1, n_max * k // 8) for k in range(1, 9)} | {45}
        ns = sorted(r.integer("n") for r in out.of("MATCH")
                    if all(r.text(f) == sweep.text(f) for f in ("algorithm", "pattern", "bytes")))
        assert ns == sorted(grid)
    assert out.of("CONFIG")[0].integer("ranks") == 2


def test_truncated_output_is_named():
    cut = "\n".join(REAL.splitlines()[:20])
    with pytest.raises(SentinelError, match=r"rfm_job.out: output of matching is truncated: "
                                            r"no 'SENTINEL_DONE bench=matching' line \(last "
                                            r"result line: 20\)"):
        require_complete(parse(cut, "matching"), "rfm_job.out")


def test_benchmark_error_line_is_reported():
    text = REAL.replace("SENTINEL_DONE bench=matching",
                        "SENTINEL_ERROR bench=matching what=data_mismatch n=8")
    done = REAL.splitlines().index("SENTINEL_DONE bench=matching") + 1
    with pytest.raises(SentinelError, match=rf"rfm_job.out:{done}: benchmark reported an error: "
                                            r"bench=matching what=data_mismatch n=8"):
        require_complete(parse(text, "matching"), "rfm_job.out")


def test_garbled_fields_name_the_line():
    lines = REAL.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("SENTINEL_MATCH "))
    lines[first] = lines[first].replace("diff_us=", "diff_us=abc")  # the first fitted line
    with pytest.raises(SentinelError, match=rf"line {first + 1}: SENTINEL_MATCH field "
                                            r"diff_us=.abc"):
        analyse(parse("\n".join(lines), "matching"), 45, 80)
    with pytest.raises(SentinelError, match="line 1: malformed result line"):
        parse("SENTINEL_MATCH n=1 oops\n", "matching")


def test_ob1_over_shared_memory_resolves_m_in_ns_with_its_interval():
    res = analyse(parse(REAL, "matching"), 45, 80)
    value, unit = res.values["match_time_tag"]
    lo, hi = res.values.intervals["match_time_tag"]
    assert unit == "ns" and 0 < lo < value < hi
    assert res.values["match_r2_tag"][0] >= 0.98
    # ob1 keeps a queue per communicator: one message per communicator is
    # never searched past, so that M is unresolved, with its bound
    assert res.values.unresolved["match_time_comm"].startswith("< ")
    assert res.queue_model == ("pingpong: per-communicator; umq: per-communicator; "
                               "prq: per-communicator")
    assert res.queue_evidence["umq"].startswith("per-communicator: tag M = ")
    assert all(unit == "ns" for name, (_, unit) in res.values.items()
               if name.startswith("match_time"))
    assert {"iot_tag", "rot_tag", "diff_tag"} <= set(res.values)
    assert "iot_tag" in res.values.intervals


def test_hashed_ucx_queues_have_no_per_message_search_cost():
    res = analyse(parse(UCX, "matching"), 45, 80)
    assert res.queue_model == ("pingpong: no per-message search cost; umq: no per-message "
                               "search cost; prq: no per-message search cost")
    # each matching time of the reference size is a bound, or a resolved
    # value far below any list search (0.03 ns for the communicators here)
    assert res.values.unresolved["match_time_tag"].startswith("< ")
    assert all(v < 0.1 for n, (v, _) in res.values.items()
               if n.startswith("match_time") and not n.endswith("B"))
    assert "queue_ratio" in res.values.unresolved  # a ratio of noise is no value


def test_mpich_searches_one_queue_for_every_communicator():
    res = analyse(parse(MPICH, "matching"), 45, 80)
    assert res.queue_model == "pingpong: shared; umq: shared; prq: shared"
    assert res.values["match_time_comm"][0] > 0.5 * res.values["match_time_tag"][0]


def test_a_slow_transport_hides_the_search_or_leaves_it_open_never_a_negative_time():
    res = analyse(parse(TCP, "matching"), 45, 80)
    assert all(v > 0 for n, (v, _) in res.values.items() if n.startswith("match_time"))
    for model in res.queue_evidence.values():
        assert model.split(":")[0] in ("per-communicator", "no per-message search cost",
                                       "inconclusive")


def test_missing_checkpoint_is_an_error():
    with pytest.raises(SentinelError, match="no result for the check-point n=46"):
        analyse(parse(REAL, "matching"), 46, 80)
