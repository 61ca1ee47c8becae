import pytest

from sentinel.analysis.matching import analyse
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import parse, require_complete
from tests.conftest import DATA

REAL = (DATA / "matching_openmpi_ob1-vader.out").read_text()


def test_real_output_parses_completely():
    out = parse(REAL, "matching")
    require_complete(out, "rfm_job.out")
    assert len(out.of("AFFINITY")) == 2
    assert len(out.of("MATCH")) == 30  # 2 algorithms x 3 patterns x 5 batch sizes
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
    with pytest.raises(SentinelError, match=r"rfm_job.out:35: benchmark reported an error: "
                                            r"bench=matching what=data_mismatch n=8"):
        require_complete(parse(text, "matching"), "rfm_job.out")


def test_garbled_fields_name_the_line():
    text = REAL.replace("diff_us=", "diff_us=abc", 1)
    with pytest.raises(SentinelError, match=r"line 5: SENTINEL_MATCH field diff_us=.abc"):
        analyse(parse(text, "matching"), 16, 80)
    with pytest.raises(SentinelError, match="line 1: malformed result line"):
        parse("SENTINEL_MATCH n=1 oops\n", "matching")


def test_analysis_of_real_output():
    res = analyse(parse(REAL, "matching"), 16, 80)
    for alg in ("tag", "comm"):
        fits = {f"match_time_{alg}", f"match_time_umq_{alg}", f"match_time_prq_{alg}"}
        # each fit is a value, or unresolved with why (M fitted below zero on noise)
        assert fits <= set(res.values) | set(res.values.unresolved)
        assert all("not positive" in res.values.unresolved[n]
                   for n in fits & set(res.values.unresolved))
        assert {f"iot_{alg}", f"rot_{alg}", f"diff_{alg}"} <= set(res.values)
    assert all(unit == "us" for name, (_, unit) in res.values.items() if "time" in name)
    assert res.queue_model in ("shared", "per-communicator", "inconclusive")


def test_missing_checkpoint_is_an_error():
    with pytest.raises(SentinelError, match="no result for the check-point n=45"):
        analyse(parse(REAL, "matching"), 45, 80)
