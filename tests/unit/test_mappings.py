import pytest

from sentinel.errors import SentinelError
from sentinel.mpi.mappings import launcher_settings, scheduler_options, tasks_per_node


def test_launcher_settings_per_family():
    assert launcher_settings("openmpi", "core", "mpirun")[0] == [
        "--map-by", "core", "--bind-to", "core"]
    assert launcher_settings("mpich", "node", "mpirun")[0][:2] == ["-ppn", "1"]
    assert launcher_settings("intelmpi", "socket", "mpirun")[1]["I_MPI_PIN_ORDER"] == "scatter"
    assert "--distribution=block:cyclic" in launcher_settings("openmpi", "socket", "srun")[0]
    assert tasks_per_node("node") == 1 and tasks_per_node("core") == 2
    # mapping node with several ranks on each node
    assert launcher_settings("openmpi", "node", "mpirun", per_node=4)[0] == [
        "--map-by", "ppr:4:node", "--bind-to", "core"]
    assert launcher_settings("openmpi", "node", "mpirun", 8, per_node=2)[0] == [
        "--map-by", "ppr:2:node:PE=8", "--bind-to", "core"]
    assert launcher_settings("mpich", "node", "mpirun", per_node=3)[0][:2] == ["-ppn", "3"]
    assert launcher_settings("intelmpi", "node", "mpirun", 4, per_node=3)[0] == ["-ppn", "3"]
    assert launcher_settings("openmpi", "node", "srun", per_node=3)[0] == ["--cpu-bind=cores"]


def test_unknown_launcher_or_mapping_is_an_error():
    with pytest.raises(SentinelError, match="no placement options for launcher 'aprun'"):
        launcher_settings("openmpi", "core", "aprun")
    with pytest.raises(SentinelError, match="unknown mapping 'numa'"):
        launcher_settings("openmpi", "numa", "mpirun")


@pytest.mark.parametrize("family,mapping,opts,env", [
    ("openmpi", "core", ["--map-by", "slot:PE=4", "--bind-to", "core"], {}),
    ("openmpi", "socket", ["--map-by", "socket:PE=4", "--bind-to", "core"], {}),
    ("mpich", "core", ["-map-by", "core", "-bind-to", "core:4"], {}),
    ("mpich", "node", ["-ppn", "1", "-bind-to", "core:4"], {}),
    ("intelmpi", "socket", [], {"I_MPI_PIN_DOMAIN": "omp", "I_MPI_PIN_ORDER": "scatter"}),
])
def test_threaded_ranks_get_several_cores(family, mapping, opts, env):
    assert launcher_settings(family, mapping, "mpirun", 4) == (opts, env)


def test_scheduler_options_realise_the_mapping():
    assert scheduler_options("pbspro", "node") == ["-l place=scatter:excl"]
    assert scheduler_options("pbs", "core") == ["-l place=pack:excl"]
    assert scheduler_options("torque", "socket") == ["-n"]
    assert scheduler_options("slurm", "node") == []
    with pytest.raises(SentinelError, match="unknown mapping 'numa'"):
        scheduler_options("slurm", "numa")
