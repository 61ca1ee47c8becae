"""Causes of abnormal job ends, from real scheduler and launcher output."""

from __future__ import annotations

from pathlib import Path

from sentinel.parsers.jobend import job_end_causes

DATA = Path(__file__).resolve().parents[1] / "data" / "joberr"


def _causes(name: str) -> list[str]:
    return job_end_causes((DATA / name).read_text())


def test_slurm_time_limit_is_named_before_the_terminated_tasks():
    assert _causes("slurm-time-limit.txt") == [
        "the job hit its time limit and Slurm cancelled it at 2026-11-22T10:00:32",
        "srun: task(s) 0-1 on c1: Terminated",
    ]


def test_open_mpi_rank_killed_by_a_signal():
    assert _causes("openmpi-segfault.txt") == [
        "rank 1 on vm died of signal 11 (Segmentation fault)"]


def test_mpich_rank_killed_by_a_signal():
    assert _causes("mpich-segfault.txt") == ["a rank died of signal 11 (Segmentation fault)"]


def test_open_mpi_refusing_root_is_named():
    assert _causes("openmpi-root.txt") == [
        "Open MPI refused to run as root (OMPI_ALLOW_RUN_AS_ROOT and "
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM are not set)"]


def test_node_failure_memory_and_missing_program():
    text = ("slurmstepd: error: *** JOB 7 ON n2 CANCELLED AT 2026-11-22T03:00:01 "
            "DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n"
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=7.0\n"
            "srun: error: n1: task 0: Killed\n")
    assert job_end_causes(text) == [
        "a node of the job failed (Slurm cancelled it at 2026-11-22T03:00:01)",
        "the job ran out of memory (oom-kill)",
        "srun: task(s) 0 on n1: Killed",
    ]
    missing = "/tmp/x/rfm_job.sh: line 9: /opt/osu/osu_latency: No such file or directory\n"
    assert job_end_causes(missing) == ["/opt/osu/osu_latency: no such program"]


def test_a_clean_run_has_no_cause():
    clean = (DATA.parent / "matching_openmpi_ob1-vader.out").read_text()
    assert job_end_causes(clean) == []


def test_a_task_exiting_with_a_code_is_left_to_the_check():
    assert job_end_causes("srun: error: c1: task 0: Exited with exit code 4\n") == []


def test_a_kill_after_the_done_line_is_a_hang_in_finalize():
    # MPICH 4.0.2 ucx-tcp over srun, both cores busy: all results printed,
    # then both ranks stayed in MPI_Finalize until the step was cancelled.
    assert _causes("mpich-finalize-hang.txt") == [
        "the job was cancelled at 2026-11-22T14:59:59",
        "srun: task(s) 0 on n1: Killed",
        "matching had printed all its results (SENTINEL_DONE), so the ranks hung in "
        "MPI_Finalize",
    ]
    # Killed before the done line: a slow or stuck benchmark, not finalize.
    text = (DATA / "mpich-finalize-hang.txt").read_text().replace("SENTINEL_DONE", "X")
    assert not any("MPI_Finalize" in c for c in job_end_causes(text))
