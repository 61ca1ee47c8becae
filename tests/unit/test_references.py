from pathlib import Path

import pytest

from sentinel.results.references import systems_from_config, validate_file
from tests.conftest import ROOT

REFERENCE_FILES = sorted((ROOT / "config" / "references").glob("*.yaml"))


@pytest.fixture(scope="module")
def systems(site_configuration):
    return systems_from_config(site_configuration)


@pytest.mark.parametrize("path", REFERENCE_FILES, ids=lambda p: p.name)
def test_every_reference_file_matches_the_configuration(path, systems):
    assert validate_file(path, systems) == []


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "example_cluster.yaml"
    path.write_text(body)
    return path


HEAD = "MatchingCheck:\n  $index: [$partition, $environ, transport_name, mapping]\n"


@pytest.mark.parametrize("body,expected", [
    ("  example_cluster:fat:\n    openmpi: {}\n",
     ":3: MatchingCheck: partition 'example_cluster:fat' is not configured"),
    ("  example_cluster:thin:\n    mpich: {}\n",
     ":4: MatchingCheck: environment 'mpich' is not in partition 'example_cluster:thin'"),
    ("  example_cluster:thin:\n    openmpi:\n      ofi-cxi: {}\n",
     ":5: MatchingCheck: transport 'ofi-cxi' is not offered by environment 'openmpi'"),
    ("  example_cluster:thin:\n    openmpi:\n      ucx-sm:\n        numa: {}\n",
     ":6: MatchingCheck: unknown mapping 'numa'"),
    ("  example_cluster:thin:\n    openmpi:\n      ucx-sm:\n        core:\n"
     "          latency: [1, -0.1, 0.1, us]\n",
     ":7: MatchingCheck has no performance variable 'latency'"),
    ("  example_cluster:thin:\n    openmpi:\n      ucx-sm:\n        core:\n"
     "          match_time_tag: [0, null, null, ns]\n",
     ":7: match_time_tag: the value and the bound on the worse side (upper) must be numbers"),
    # a time with an open upper bound could never fail; its lower bound may be open
    ("  example_cluster:thin:\n    openmpi:\n      ucx-sm:\n        core:\n"
     "          match_time_tag: [3.0, -0.1, null, ns]\n",
     ":7: match_time_tag: the value and the bound on the worse side (upper) must be numbers"),
    ("  example_cluster:thin:\n    openmpi:\n      ucx-sm:\n        core:\n"
     "          match_time_tag: [1.0e9, -0.1, 0.5, ns]\n",
     ":7: match_time_tag: '1.0e9' is text to YAML: write exponents with a sign"),
    ("  example_cluster:thin:\n    openmpi:\n      ucx-sm:\n        core:\n"
     "          match_time_tag: [0.1, 0.1, 0.5, ns]\n",
     ":7: match_time_tag: bounds must satisfy -1 <= lower <= 0 <= upper"),
    ("  example_cluster:thin:\n    openmpi:\n      ucx-sm:\n        core:\n"
     "          match_time_tag: [0.1, -2.0, 0.5, ns]\n",
     ":7: match_time_tag: bounds must satisfy -1 <= lower <= 0 <= upper"),
    ("  example_cluster:thin:\n    openmpi:\n      ucx-sm:\n        core:\n"
     "          match_time_tag: [0.1, -0.1, 0.5, ms]\n",
     ":7: match_time_tag: unit must be 'ns', got 'ms'"),
])
def test_bad_entries_are_named_with_file_and_line(tmp_path, systems, body, expected):
    errors = validate_file(write(tmp_path, HEAD + body), systems)
    assert len(errors) == 1 and expected in errors[0], errors


def test_wrong_index_unknown_check_and_system(tmp_path, systems):
    errors = validate_file(write(tmp_path, "MatchingCheck:\n  $index: [$system]\n"
                                           "FooCheck: {}\n"), systems)
    assert any("$index must be" in e for e in errors)
    assert any(":3: unknown check 'FooCheck'" in e for e in errors)
    other = tmp_path / "nowhere.yaml"
    other.write_text(HEAD)
    assert "no configured system named 'nowhere'" in validate_file(other, systems)[0]


def test_broken_yaml_is_reported(tmp_path, systems):
    errors = validate_file(write(tmp_path, "MatchingCheck: [unclosed\n"), systems)
    assert "not valid YAML" in errors[0]


def test_osu_references_have_a_benchmark_level(tmp_path, systems):
    body = ("OsuCheck:\n  $index: [$partition, $environ, transport_name, mapping, benchmark]\n"
            "  example_cluster:thin:\n    openmpi:\n      ucx-sm:\n        core:\n"
            "          osu_latency:\n            latency_8B: [0.2, -0.5, 0.5, us]\n"
            "          osu_ping:\n            latency_8B: [0.2, -0.5, 0.5, us]\n"
            "          osu_bw:\n            bw_peak: [6000, -0.2, 1.0, MB/s]\n")
    errors = validate_file(write(tmp_path, body), systems)
    assert len(errors) == 1 and ":9: OsuCheck: unknown benchmark 'osu_ping'" in errors[0]


def test_the_better_side_may_be_open(tmp_path, systems):
    # what sentinel calibrate writes: a rate's upper bound and a time's lower bound open
    path = tmp_path / "example_cluster.yaml"
    path.write_text("MatchingCheck:\n  $index: [$partition, $environ, transport_name, mapping]\n"
                    "  example_cluster:thin:\n    openmpi:\n      ucx-sm:\n        core:\n"
                    "          match_time_tag: [3.0, null, 0.2, ns]\n"
                    "          host_copy_bw: [9.0, -0.3, null, GB/s]\n")
    assert validate_file(path, systems) == []
