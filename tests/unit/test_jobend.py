"""Causes of abnormal job ends, from real scheduler and launcher output."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentinel.parsers.jobend import FINALIZE_HANG, job_end_causes, job_end_message

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


def test_a_series_whose_last_launch_crashed_is_not_a_hang_in_finalize():
    # N = 1 and 2 printed their done lines; the N = 4 launch crashed and hung
    text = (DATA / "openmpi-series-segfault.txt").read_text()
    causes = job_end_causes(text, "ring", launches=3)
    assert "srun: task(s) 2 on m3: Segmentation fault" in causes
    assert not any("MPI_Finalize" in c for c in causes), causes
    assert any("MPI_Finalize" in c for c in job_end_causes(text, "ring", launches=2))
    # a third-party suite's job: the affinity probe's done line says nothing of it
    assert not any("MPI_Finalize" in c for c in job_end_causes(
        (DATA / "mpich-finalize-hang.txt").read_text(), ""))


UCX_BOGUS = ('UCX: "transport \'bogus\' is not available, please use one or more of: cma, mm, '
             'posix, self, shm, sm, sysv, tcp"')
UCX_UNREACHABLE = ('UCX: "no active messages transport to <no debug data>: self/memory0 - '
                   'Destination is unreachable"')


@pytest.mark.parametrize(("name", "causes"), [
    ("openmpi-pml-ucx.txt", ['Open MPI could not start: "PML ucx cannot be selected"']),
    ("openmpi-ofi-provider.txt", [
        'Open MPI (mtl ofi): "select_ofi_provider: no provider found"',
        'Open MPI could not start: "PML cm cannot be selected"']),
    ("openmpi-btl-missing.txt", [
        'Open MPI has no btl component "bogus" (or cannot open it)',
        'MPI_Init failed in Open MPI: "mca_bml_base_open() failed" (Returned "Not found" (-13) '
        'instead of "Success" (0))']),
    ("openmpi-ucx-tls.txt", [
        UCX_BOGUS, UCX_UNREACHABLE,
        'MPI_Init failed in Open MPI: "PML add procs failed" (Returned "Error" (-1) instead of '
        '"Success" (0))']),
    ("mpich-ucx-tls.txt", [
        UCX_BOGUS, UCX_UNREACHABLE,
        'MPI_Init failed: "ucx function returned with failed status(ucx_init.c 145 '
        'initial_address_exchange Destination is unreachable)"']),
    ("intelmpi-ofi-provider.txt", [
        'MPI_Init failed: "OFI fi_getinfo() failed (ofi_init.c:3064:find_provider:No data '
        'available)"']),
])
def test_an_mpi_that_cannot_start_is_quoted(name, causes):
    assert _causes(name) == causes


def test_the_benchmark_rejecting_an_argument_is_quoted():
    assert _causes("pt2pt-bad-argument.txt") == [
        'pt2pt stopped with an error: "--max-size: -5 is out of range [1, 1073741824]"']
    srun = "srun: error: c1: task 0: Exited with exit code 2\n"
    line = "pt2pt: error: --max-size: -5 is out of range [1, 1073741824]\n"
    assert job_end_causes(line + srun) == _causes("pt2pt-bad-argument.txt")


def test_open_mpi_abort_block_is_said_only_without_a_better_cause():
    text = (DATA / "openmpi-ucx-tls.txt").read_text()
    block = text[text.index("[vm:30519] *** An error occurred"):]
    assert job_end_causes(block) == ['Open MPI aborted in MPI_Init: "Unknown error"']
    assert not any("aborted" in c for c in job_end_causes(text))


def test_library_warnings_alone_are_no_cause():
    text = (DATA / "mpich-ucx-tls.txt").read_text()
    assert job_end_causes(text[:text.index("Abort(")]) == []


def test_a_crash_does_not_mention_the_time_limit():
    assert job_end_message(_causes("openmpi-segfault.txt"), 120.0) == (
        "the job ended abnormally: rank 1 on vm died of signal 11 (Segmentation fault)")
    assert job_end_message(_causes("openmpi-pml-ucx.txt"), 120.0) == (
        'the job ended abnormally: Open MPI could not start: "PML ucx cannot be selected"')


def test_a_time_limit_kill_or_a_hang_after_a_kill_mentions_the_limit():
    assert job_end_message(_causes("slurm-time-limit.txt"), 60.0) == (
        "the job ended abnormally (time limit 60 s): the job hit its time limit and Slurm "
        "cancelled it at 2026-11-22T10:00:32; srun: task(s) 0-1 on c1: Terminated")
    assert job_end_message(_causes("mpich-finalize-hang.txt"), 1800.0).startswith(
        "the job ended abnormally (time limit 1800 s): the job was cancelled at ")
    assert job_end_message(_causes("slurm-time-limit.txt"), None).startswith(
        "the job ended abnormally: the job hit its time limit")


def test_a_finalize_stopped_by_the_watchdog_is_a_hang_without_a_time_limit():
    text = ("SENTINEL_DONE bench=ring\n"
            "ring: error: rank 3: MPI_Finalize did not return within 60 s\n"
            "srun: error: m2: task 3: Exited with exit code 6\n"
            "srun: error: m1: tasks 0-1: Killed\n")
    causes = job_end_causes(text, "ring")
    assert causes == ["ring had printed all its results (SENTINEL_DONE), so the ranks hung in "
                      "MPI_Finalize: its watchdog stopped rank 3 after 60 s",
                      "srun: task(s) 0-1 on m1: Killed"]
    assert FINALIZE_HANG in causes[0]
    assert job_end_message(causes, 600).startswith("the job ended abnormally: ring had printed")
    # another error of the benchmark is still its own cause
    assert job_end_causes("ring: error: --size 12 is not a multiple of 8\n", "ring") == [
        'ring stopped with an error: "--size 12 is not a multiple of 8"']


def test_the_benchmark_s_own_words_come_before_the_launcher_s_cleanup():
    # Hydra under load (a full CI run): rank 1's watchdog stopped it, Hydra hung
    # up on rank 0 and printed that on stdout, which comes before stderr here
    stdout = ("SENTINEL_DONE bench=ring\n"
              "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Hangup (signal 1)\n")
    stderr = "ring: error: rank 1: MPI_Finalize did not return within 3 s\n"
    assert job_end_causes(stdout + stderr, "ring") == [
        "ring had printed all its results (SENTINEL_DONE), so the ranks hung in "
        "MPI_Finalize: its watchdog stopped rank 1 after 3 s",
        "a rank died of signal 1 (Hangup)"]
    # without the benchmark's words, the launcher's are the cause
    assert job_end_causes(stdout, "ring") == ["a rank died of signal 1 (Hangup)"]


def test_open_mpis_ob1_crashing_on_a_message_in_mpi_init_is_named_with_its_node():
    causes = job_end_causes((DATA / "openmpi5-ob1-init-race.txt").read_text(), "jacobi", 4)
    assert causes[0] == ("Open MPI's ob1 crashed on a message that arrived while its rank was "
                         "in MPI_Init on m3 (open-mpi/ompi issue 11438: a race of the library, "
                         "not a fault of the node)")
    assert "srun: task(s) 4 on m3: Killed" in causes
    # Open MPI 4's segfault in its TCP BTL (elsewhere than MPI_Init) is not this race
    assert not any("ob1 crashed" in c for c in _causes("openmpi-series-segfault.txt"))
    assert not any("ob1 crashed" in c for c in _causes("openmpi-segfault.txt"))


def test_slurms_pmi2_server_rejecting_the_mpis_request_is_named_first():
    causes = _causes("mpich5-srun-pmi2-request.txt")
    assert causes[0] == ("Slurm's PMI-2 server could not parse a request of the MPI's PMI-2 "
                         "client (srun --mpi=pmi2: value not properly terminated in client "
                         "request)")
    assert causes[1].startswith('MPI_Init failed: "ucx function returned with failed status')
