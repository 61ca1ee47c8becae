"""The nightly rotation, as the real ReFrame selects it: every variant once a week."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from tests.integration.conftest import need_stack, reframe

#: One environment of two transports: the listings' cost, not their selection, grows with more.
CONFIG = ROOT / "tests" / "config" / "two_transports.py"


def _listed(output: str, check: str) -> list[str]:
    return re.findall(rf"^- ({check} .*?) /\w+$", output, re.MULTILINE)


def test_each_rotating_variant_runs_on_exactly_one_night_of_the_week(tmp_path):
    need_stack("openmpi")
    everything = reframe(["-l"], tmp_path, config=CONFIG, checks=("hybrid.py", "matching.py"))
    assert everything.returncode == 0, everything.output
    all_hybrid = _listed(everything.output, "HybridCheck")
    assert all_hybrid
    nights = []
    for night in range(7):
        run = reframe(["-S", "rotation=7", "-S", f"night={night}", "-l"], tmp_path,
                      config=CONFIG, checks=("hybrid.py", "matching.py"))
        assert run.returncode == 0, run.output
        nights.append(_listed(run.output, "HybridCheck"))
        # matching does not rotate: every transport and mapping, every night
        assert _listed(run.output, "MatchingCheck") == _listed(everything.output,
                                                                "MatchingCheck")
    assert sorted(v for night in nights for v in night) == sorted(all_hybrid)
    assert max(map(len, nights)) <= 2 * len(all_hybrid) / 7 + 2  # shared out, not lumped
