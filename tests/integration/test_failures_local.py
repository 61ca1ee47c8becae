"""Fail loudly and precisely: what a real ReFrame session says about bad input."""

from __future__ import annotations

import os
import re
import subprocess

from tests.conftest import ROOT
from tests.integration.conftest import QUICK, need_stack, reframe


def _listed_environs(output: str) -> set[str]:
    return set(re.findall(r"~local:\w+\+(\w+)", output))


def test_prgenv_selects_with_a_mode(tmp_path):
    need_stack("openmpi")
    need_stack("mpich")
    run = reframe([*QUICK, "-p", "openmpi$", "-l"], tmp_path, checks=("pt2pt.py",))
    assert run.returncode == 0, run.output
    assert _listed_environs(run.output) == {"openmpi"}


def test_a_bad_setvar_value_is_one_clear_error(tmp_path):
    run = reframe(["-S", "Pt2ptCheck.max_size=abc", "-S", "MatchingCheck.lengths=10,x", "-l"],
                  tmp_path, checks=("pt2pt.py",))
    assert run.returncode == 1
    assert "Traceback" not in run.output
    assert ("-S Pt2ptCheck.max_size=abc: 'abc' is not a valid value of Pt2ptCheck.max_size "
            "(int; the test is in pt2pt.py)") in run.output
    assert "-S MatchingCheck.lengths=10,x: '10,x' is not a valid value" in run.output


BROKEN_REFERENCES = """\
MatchingCheck:
  $index: [$partition, $environ, transport_name, mapping]
  local:cpu:
    openmpi:
      ob1-vader:
        core:
          match_time_umq_tga: [0.5, -1.0, 1.0, ns]
          match_time_umq_tag: [0.5, -0.2, -0.2, ms]
"""


def _run_on_references(tmp_path, text: str):
    refdir = tmp_path / "refs"
    refdir.mkdir()
    (refdir / "local.yaml").write_text(text)
    return reframe([*QUICK, "-n", "MatchingCheck.*transport=ob1-vader.*mapping=core",
                    "-p", "openmpi$", "-r"], tmp_path, env={"SENTINEL_REFERENCES": str(refdir)},
                   checks=("matching.py",)), refdir / "local.yaml"


def test_a_broken_reference_file_stops_the_run_before_any_benchmark(tmp_path):
    run, path = _run_on_references(tmp_path, BROKEN_REFERENCES)
    assert run.returncode == 1
    assert "Traceback" not in run.output
    assert f"{path}:7: MatchingCheck has no performance variable 'match_time_umq_tga'" \
        in run.output
    assert f"{path}:8: match_time_umq_tag: bounds must satisfy" in run.output
    assert f"{path}:8: match_time_umq_tag: unit must be 'ns', got 'ms'" in run.output
    assert not (tmp_path / "var" / "stage").exists()  # nothing was built or run


def test_a_yaml_syntax_error_is_one_line_with_its_place(tmp_path):
    run, path = _run_on_references(tmp_path, BROKEN_REFERENCES.replace("core:", "core: [", 1))
    assert run.returncode == 1
    assert "Traceback" not in run.output
    assert re.search(rf"{re.escape(str(path))}:\d+: not valid YAML: ", run.output), run.output


def test_detection_names_the_transports_an_exported_variable_hides(tmp_path):
    need_stack("openmpi")
    run = reframe(["-l"], tmp_path, env={"FI_PROVIDER": "sentinel-none"}, checks=("pt2pt.py",))
    assert run.returncode == 0, run.output
    assert re.search(r"mpi-sentinel: openmpi: not tested here: ofi-\S+(, ofi-\S+)*: libfabric "
                     r"lists none of these providers with FI_PROVIDER=sentinel-none exported "
                     r"in this shell \(unset it to detect them\)", run.output), run.output
    assert "%transport=ofi-tcp" not in run.output  # what the line says is what happened


def test_a_selection_that_matches_nothing_is_an_error(tmp_path):
    # ReFrame itself says "Ran 0/0 test case(s)", exits 0 and writes no run report.
    proc = subprocess.run(["make", "-s", "-o", "setup", "run", "MODE=quick -n NoSuchCheck"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SENTINEL_OUTPUT": str(tmp_path)})
    assert proc.returncode != 0
    assert ("make run: error: the selection matched no test case, nothing was measured"
            in proc.stderr), proc.stderr[-2000:]
