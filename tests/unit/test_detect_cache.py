"""The detection cache: a start under the same environment reuses a recent detection, no other."""

from __future__ import annotations

import os
import time

import pytest

from sentinel.site import detect, detect_cache


@pytest.fixture
def detections(monkeypatch, tmp_path):
    """Count the detections; the cache under ``tmp_path/cache``."""
    made = []

    def fake() -> list[detect.MpiStack]:
        made.append(1)
        return [detect.MpiStack("openmpi", "4.1.4", "mpicc.openmpi", "/l", ["ob1-tcp"],
                                env_vars={"A": "1"}, notes=["n"], dropped=["ucx-rc: x"])]

    monkeypatch.setattr(detect, "local_stacks", fake)
    monkeypatch.setenv("SENTINEL_DETECT_CACHE", str(tmp_path / "cache"))
    return made


def test_a_start_under_the_same_environment_reuses_the_detection(detections, monkeypatch):
    first = detect_cache.local_stacks()
    monkeypatch.setenv("SENTINEL_OUTPUT", "/elsewhere")  # where output goes: the same key
    assert detect_cache.local_stacks() == first
    assert len(detections) == 1
    assert first[0].dropped == ["ucx-rc: x"] and first[0].env_vars == {"A": "1"}


def test_another_environment_or_mpi_command_is_detected_anew(detections, monkeypatch, tmp_path):
    detect_cache.local_stacks()
    monkeypatch.setenv("FI_PROVIDER", "tcp")
    detect_cache.local_stacks()
    assert len(detections) == 2
    fake = tmp_path / "bin" / "ompi_info"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    detect_cache.local_stacks()
    detect_cache.local_stacks()
    assert len(detections) == 3
    os.utime(fake, ns=(0, 10**9))  # the command replaced: another modification time
    detect_cache.local_stacks()
    assert len(detections) == 4


def test_an_old_or_damaged_detection_is_made_again(detections, tmp_path):
    detect_cache.local_stacks()
    (cached,) = (tmp_path / "cache").glob("stacks-*.json")
    old = time.time() - detect_cache.TTL_S - 1
    os.utime(cached, (old, old))
    detect_cache.local_stacks()
    assert len(detections) == 2
    cached.write_text('[{"family": "openmpi"')  # cut short
    assert detect_cache.local_stacks()[0].version == "4.1.4"
    assert len(detections) == 3


def test_off_or_an_unwritable_cache_detects_at_every_start(detections, monkeypatch, tmp_path):
    monkeypatch.setenv("SENTINEL_DETECT_CACHE", "off")
    detect_cache.local_stacks()
    detect_cache.local_stacks()
    assert len(detections) == 2
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("SENTINEL_DETECT_CACHE", str(blocked / "cache"))
    assert detect_cache.local_stacks()[0].family == "openmpi"
    assert len(detections) == 3


def test_the_cache_lies_under_the_output_unless_placed(monkeypatch, tmp_path):
    monkeypatch.delenv("SENTINEL_DETECT_CACHE")
    monkeypatch.setenv("SENTINEL_OUTPUT", str(tmp_path))
    assert detect_cache.cache_dir() == tmp_path / "var" / "detect"
    monkeypatch.setenv("SENTINEL_DETECT_CACHE", "OFF")
    assert detect_cache.cache_dir() is None
