"""The nightly's reading of ``sentinel plan --defer``'s file (sentinel.rfm.deferral)."""

from __future__ import annotations

import json

import pytest

from sentinel.errors import SentinelError
from sentinel.rfm import deferral


def test_a_deferred_case_is_found_on_its_partition_only(tmp_path):
    path = tmp_path / "deferred.json"
    path.write_text(json.dumps({"big_site:p00": [{"test": "FabricCheck %mode=pairs",
                                                   "environ": "openmpi"}]}))
    assert deferral.deferred(str(path), "big_site:p00", "FabricCheck %mode=pairs", "openmpi")
    assert not deferral.deferred(str(path), "big_site:p00", "FabricCheck %mode=pairs", "mpich")
    assert not deferral.deferred(str(path), "big_site:p01", "FabricCheck %mode=pairs", "openmpi")


@pytest.mark.parametrize("text, message", [
    ("{", "not JSON"),
    ("[]", "expected an object of partitions"),
    ('{"p": {}}', "'p': expected a list of test cases"),
    ('{"p": [{"test": "T"}]}', r"'p'\[0\] is \{'test': 'T'\}: expected"),
])
def test_a_malformed_file_is_an_error_naming_it(tmp_path, text, message):
    path = tmp_path / f"bad{len(text)}.json"
    path.write_text(text)
    with pytest.raises(SentinelError, match=f"deferred_file {path}: {message}"):
        deferral.load(str(path))


def test_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(SentinelError, match="cannot be read"):
        deferral.load(str(tmp_path / "absent.json"))
