"""The packed job's script and what its members read of it, run by a real bash."""

from __future__ import annotations

import subprocess

from sentinel.rfm import packing

PACKED = packing.PerTransport()


def _run(tmp_path, body: list[str], launches: list[packing.Launch], limit_s: float) -> None:
    # what Repetition.wrap makes of a job body, without a ReFrame test
    script = ["#!/bin/bash", f"{PACKED.function}() {{", *body, "}",
              f"export -f {PACKED.function}", *PACKED.lines(launches, limit_s)]
    (tmp_path / "job.sh").write_text("\n".join(script) + "\n")
    subprocess.run(["bash", "job.sh"], cwd=tmp_path, check=True, timeout=60)


def test_each_launch_runs_the_body_in_its_directory_with_its_environment(tmp_path):
    launches = [packing.Launch("ob1-tcp", {"SEL": "tcp;x y"}),
                packing.Launch("ucx-sm", {"SEL": "sm"}), packing.Launch("bare", {})]
    _run(tmp_path, ['echo "sel=${SEL:-none} dir=$(basename "$PWD")"', "echo err >&2",
                    'test "$SEL" != sm'], launches, 10)
    out = {n: (tmp_path / "packed" / n / PACKED.out).read_text() for n in ("ob1-tcp", "ucx-sm",
                                                                            "bare")}
    assert out == {"ob1-tcp": "sel=tcp;x y dir=ob1-tcp\n", "ucx-sm": "sel=sm dir=ucx-sm\n",
                   "bare": "sel=none dir=bare\n"}  # no launch sees another's variables
    assert (tmp_path / "packed" / "ucx-sm" / PACKED.err).read_text() == "err\n"
    statuses = {n: PACKED.run(str(tmp_path), n) for n in out}
    assert {n: s.exit_status for n, s in statuses.items()} == {"ob1-tcp": 0, "ucx-sm": 1,
                                                               "bare": 0}
    assert all(PACKED.causes(s, "S", "10 s", []) == [] for s in statuses.values())


def test_a_launch_past_its_limit_is_stopped_and_the_next_one_runs(tmp_path):
    launches = [packing.Launch("slow", {"T": "30"}), packing.Launch("fast", {"T": "0"})]
    _run(tmp_path, ['sleep "$T" & wait', "echo done"], launches, 1)
    slow = PACKED.run(str(tmp_path), "slow")
    assert slow.timed_out and slow.exit_status == 124
    assert PACKED.causes(slow, "Pt2ptCheck %transport=openmpi-all", "1 s", []) == [
        "the launch ran past its time limit of 1 s in the packed job Pt2ptCheck "
        "%transport=openmpi-all and was stopped (timeout, exit status 124)"]
    assert (tmp_path / "packed" / "fast" / PACKED.out).read_text() == "done\n"


def test_a_launch_never_reached_or_cut_short_names_the_packed_job_and_its_end(tmp_path):
    missing = PACKED.run(str(tmp_path), "ucx-tcp")
    assert not missing.started
    assert PACKED.causes(missing, "S", "1 s", ["the job hit its time limit"]) == [
        f"the packed job S ended before it launched this transport ({missing.where} does "
        "not exist)", "the job hit its time limit"]
    (tmp_path / "packed" / "ucx-tcp").mkdir(parents=True)
    cut = PACKED.run(str(tmp_path), "ucx-tcp")
    assert cut.started and cut.exit_status is None
    assert PACKED.causes(cut, "S", "1 s", ["node n2 failed"]) == [
        "the packed job S ended during this launch", "node n2 failed"]


def test_packed_keys():
    assert packing.packed_key("mpich") == "mpich/all"
    assert packing.is_packed_key("mpich/all") and not packing.is_packed_key("mpich/ucx-tcp")
