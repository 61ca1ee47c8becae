"""What a listing costs and shows: packed jobs only where packing is asked, debug on -vv."""

from __future__ import annotations

import re

import pytest

from tests.integration.conftest import need_stack, reframe

pytestmark = pytest.mark.integration


def test_packed_jobs_are_generated_only_when_a_mode_or_option_packs(tmp_path):
    need_stack("openmpi")
    plain = reframe(["-l", "-p", "openmpi$"], tmp_path, checks=("pt2pt.py",))
    nightly = reframe(["--mode", "nightly", "-l", "-p", "openmpi$"], tmp_path,
                      checks=("pt2pt.py",))
    asked = reframe(["-S", "Pt2ptCheck.pack_transports=yes", "-l", "-p", "openmpi$"], tmp_path,
                    checks=("pt2pt.py",))
    assert plain.returncode == nightly.returncode == asked.returncode == 0
    assert "%transport=openmpi-all" not in plain.output
    # each transport depends on its packed job: listed under it
    assert "^Pt2ptCheck %transport=openmpi-all %mapping=core" in nightly.output
    assert "^Pt2ptCheck %transport=openmpi-all %mapping=core" in asked.output


def test_debug_output_still_reaches_the_console_on_vv(tmp_path):
    quiet = reframe(["-l"], tmp_path, checks=("pt2pt.py",))
    debug = reframe(["-l", "-vv"], tmp_path, checks=("pt2pt.py",))
    assert "Initializing runtime" not in quiet.output
    assert "Initializing runtime" in debug.output


def _loaded(output: str) -> int:
    found = re.search(r"^Loaded (\d+) test\(s\)", output, re.MULTILINE)
    assert found, output[-2000:]
    return int(found[1])


def test_a_set_option_generates_no_more_variants_than_the_system_offers(tmp_path):
    # The configuration imports the check files to check -S values before
    # ReFrame has a runtime; ReFrame's own load must still see the system's
    # transports only (it once saw the whole catalogue: 570 tests here instead of 118).
    plain = reframe(["-l", "-v"], tmp_path, checks=("pt2pt.py", "matching.py"))
    setvar = reframe(["-l", "-v", "-S", "MatchingCheck.budget=3"], tmp_path,
                     checks=("pt2pt.py", "matching.py"))
    assert plain.returncode == setvar.returncode == 0, setvar.output[-2000:]
    assert _loaded(setvar.output) == _loaded(plain.output)


#: Selections whose listing must not change when the checks they cannot select
#: are not registered, each over the check files that make its point: a mode's
#: tags (quick: OSU and the source builds excluded, IMB's prebuilt kept); a
#: mode's names with the command line's added, one excluded, and tests that
#: depend on another check (Jacobi's weak series on Pt2ptCheck). The unit
#: tests judge -t and -T on every class.
SELECTIONS = [
    (["--mode", "quick"], ("osu.py", "imb.py", "matching.py")),
    (["--mode", "vet", "-n", "JacobiCheck.*mode=pure", "-S", "JacobiCheck.scaling=weak",
      "-x", "JacobiCheck.*mapping=socket"], ("jacobi.py", "pt2pt.py", "hybrid.py", "ring.py")),
]


def _listed(output: str) -> list[str]:
    return [line for line in output.splitlines()
            if re.match(r"\s*[-^]\s*\w+Check", line) or line.startswith("Found ")]


@pytest.mark.parametrize(("selection", "files"), SELECTIONS,
                         ids=["quick mode tags", "vet names exclusion dependency"])
def test_a_session_lists_the_same_without_registering_what_it_cannot_select(tmp_path,
                                                                              selection, files):
    need_stack("openmpi")
    every = reframe([*selection, "-l", "-v"], tmp_path, env={"SENTINEL_REGISTER_ALL": "1"},
                    checks=files)
    pruned = reframe([*selection, "-l", "-v"], tmp_path, checks=files)
    assert every.returncode == pruned.returncode == 0, pruned.output[-2000:]
    assert _listed(pruned.output) == _listed(every.output)
    assert len(_listed(pruned.output)) > 1
    # the point: fewer variants instantiated for the same listing
    assert _loaded(pruned.output) < _loaded(every.output)
