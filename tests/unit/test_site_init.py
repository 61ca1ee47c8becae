"""``sentinel init`` offline: the scheduler's answers and the nodes' reports, as captured.

``tests/data/init/slurm``: a real run of ``sentinel init --keep`` on the
Slurm test cluster (partitions ``one`` and ``two``, Intel MPI reachable
only through an Lmod module). ``tests/data/init/pbs``: PBS Pro's JSON
answers for the Orfeo queues (see that directory's README) and node
reports captured with ``python -m sentinel.site.discover``.
"""

from __future__ import annotations

import json
import runpy
import shutil
from pathlib import Path

import pytest

from sentinel.results import cli
from sentinel.site import discover, slurm
from sentinel.site.init import jobs, scheduler, writer
from sentinel.site.slurm import job_processor

DATA = Path(__file__).resolve().parents[1] / "data" / "init"


def _answer(kind: str) -> scheduler.Answer:
    path = DATA / kind / "scheduler.json"
    return scheduler.Answer.from_json(json.loads(path.read_text()), str(path))


def _init(tmp_path: Path, source: Path, *more: str) -> tuple[int, Path]:
    out = tmp_path / "systems" / "site.py"
    rc = cli.main(["init", "--name", "site", "--from", str(source), "--out", str(out), *more])
    return rc, out


def test_slurm_partitions_and_their_node_types_are_read_from_scontrol():
    answer = _answer("slurm")
    parts = {p.name: p for p in scheduler.partitions(answer)}
    assert list(parts) == ["one", "two"]
    (one,), (two,) = parts["one"].types, parts["two"].types
    assert parts["one"].types[one] == ["c1"] and parts["two"].types[two] == ["n1", "n2"]
    # n1 and n2 reserve one of their two CPUs: a job gets the other
    assert (one.cpus, two.cpus) == (2, 1) and "1 CPU(s) for jobs of 2" in two.describe()
    assert not scheduler.slurm_accounting(answer)


def test_pbs_queues_take_their_nodes_from_qlist_and_leave_out_what_runs_nothing():
    parts = {p.name: p for p in scheduler.partitions(_answer("pbs"))}
    assert set(parts) == {"dssc", "dssc_gpu", "maint"}  # the routing queue is no partition
    (thin,), (gpu,) = parts["dssc"].types, parts["dssc_gpu"].types
    assert len(parts["dssc"].types[thin]) == 4  # the fifth node is offline
    assert (thin.cpus, gpu.cpus, gpu.gpus) == (24, 48, 2)
    assert not parts["maint"].usable and parts["dssc"].usable
    labels = [j.label for j in jobs.jobs_of(list(parts.values()))]
    assert labels == ["dssc", "dssc_gpu"]  # no job for a disabled queue


def test_a_partition_with_two_node_types_gets_a_job_on_each_told_apart_by_feature():
    text = "\n".join(
        f"NodeName={n} CPUTot={c} CPUEfctv={c} Sockets=2 CoresPerSocket={c // 2} "
        f"ThreadsPerCore=1 AvailableFeatures={f} Gres={g} Partitions=mix State=IDLE"
        for n, c, f, g in [("a1", 64, "rome", "(null)"), ("a2", 64, "rome", "(null)"),
                           ("g1", 32, "v100", "gpu:v100:4")])
    answer = scheduler.Answer("slurm", {"scontrol -o show nodes": text,
                                        "scontrol -o show partitions": "PartitionName=mix "
                                        "State=UP"})
    (mix,) = scheduler.partitions(answer)
    todo = jobs.jobs_of([mix])
    assert [(j.label, j.node) for j in todo] == [("mix-1", "a1"), ("mix-2", "g1")]
    assert "#SBATCH --nodelist=g1" in jobs.script("slurm", todo[1], Path("/d"))
    assert todo[1].shape.gpus == 4
    site = writer.Site("s", "slurm")
    report = json.loads((DATA / "slurm" / "discover-one.json").read_text())
    writer.build(site, [mix], {j.label: (j, report) for j in todo})
    access = {p["name"]: p["access"] for p in site.partitions}
    assert access["mix-1"][-1] == "--constraint=rome" and access["mix-2"][-1] == "--constraint=v100"
    assert "gpu" in next(p for p in site.partitions if p["name"] == "mix-2")["features"]


def test_the_written_slurm_site_declares_each_transport_and_how_each_mpi_is_reached(tmp_path):
    rc, out = _init(tmp_path, DATA / "slurm")
    assert rc == 0
    module = runpy.run_path(str(out))
    parts = {p["name"]: p for p in module["system"]["partitions"]}
    assert set(parts) == {"one", "two"}
    assert parts["two"]["processor"]["num_cpus"] == 1 and parts["two"]["extras"]["num_nodes"] == 2
    assert parts["one"]["scheduler"] == "squeue"  # no accounting on the test cluster
    envs = {e["name"]: e for e in module["environments"]}
    reports = [json.loads((DATA / "slurm" / f"discover-{p}.json").read_text())
               for p in ("one", "two")]
    for stack in reports[0]["stacks"]:
        env = envs[stack["family"]]
        assert env["features"] == ["mpi", stack["family"], *stack["transports"]]
        assert env["modules"] == stack["modules"]
        assert env["target_systems"] == ["site"]  # the same on both partitions
    assert envs["intelmpi"]["modules"] == ["intel-mpi/2021.18.1"]
    assert ["I_MPI_PMI_LIBRARY", reports[0]["launch"]["pmi2_library"]] in envs["intelmpi"][
        "env_vars"]
    assert envs["openmpi"]["extras"]["launcher_options"][0] == "--mpi=pmix"
    text = out.read_text()
    assert "jobs get 1 of its 2 CPUs" in text and "sentinel init --name site" in text


def test_an_existing_configuration_is_never_overwritten_without_force(tmp_path, capsys):
    rc, out = _init(tmp_path, DATA / "slurm")
    before = out.read_text()
    out.write_text(before + "# a site's own edit\n")
    rc, out = _init(tmp_path, DATA / "slurm")
    assert rc == 1 and "exists: sentinel init never overwrites" in capsys.readouterr().err
    assert out.read_text().endswith("# a site's own edit\n")
    rc, out = _init(tmp_path, DATA / "slurm", "--force")
    assert rc == 0 and "a site's own edit" not in out.read_text()


def test_a_truncated_report_leaves_its_partition_out_and_the_rest_written(tmp_path, capsys):
    source = tmp_path / "collected"
    shutil.copytree(DATA / "slurm", source)
    text = (source / "discover-two.json").read_text()
    (source / "discover-two.json").write_text(text[: len(text) // 2])
    (source / "discover-two.err").write_text("slurmstepd: error: *** JOB 7 CANCELLED ***\n")
    rc, out = _init(tmp_path, source)
    printed = capsys.readouterr().out
    assert rc == 0
    assert [p["name"] for p in runpy.run_path(str(out))["system"]["partitions"]] == ["one"]
    line = next(x for x in printed.splitlines() if "partition two" in x)
    assert "not a complete JSON report" in line and "truncated" in line
    assert "JOB 7 CANCELLED" in line


def test_no_report_at_all_writes_nothing_and_says_why(tmp_path, capsys):
    source = tmp_path / "collected"
    source.mkdir()
    shutil.copy(DATA / "slurm" / "scheduler.json", source)
    rc, out = _init(tmp_path, source)
    err = capsys.readouterr().err
    assert rc == 1 and not out.exists()
    assert "no partition could be written" in err and "discover-one.json is missing" in err


def test_from_a_directory_without_an_answer_is_an_error_naming_the_file(tmp_path, capsys):
    rc, _ = _init(tmp_path, tmp_path)
    err = capsys.readouterr().err
    assert rc == 1 and f"{tmp_path / 'scheduler.json'}: cannot be read" in err
    (tmp_path / "scheduler.json").write_text('{"kind": "lsf"}')
    rc, _ = _init(tmp_path, tmp_path)
    assert rc == 1 and "not a scheduler answer written by sentinel init" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--name", "my-site"], "a site's name is a Python identifier"),
    (["--name", "s", "--budget-jobs", "4"], "--budget-jobs and --budget-node-hours go together"),
    (["--name", "s", "--timeout", "0"], "--timeout 0: seconds, more than 0"),
])
def test_bad_options_are_named(tmp_path, capsys, args, message):
    assert cli.main(["init", *args, "--from", str(DATA / "slurm"),
                     "--out", str(tmp_path / "s.py")]) == 1
    assert message in capsys.readouterr().err


def test_a_budget_given_is_written_for_sentinel_plan(tmp_path):
    rc, out = _init(tmp_path, DATA / "slurm", "--budget-jobs", "40", "--budget-node-hours", "6")
    parts = runpy.run_path(str(out))["system"]["partitions"]
    assert rc == 0 and all(p["extras"]["nightly_budget"] == {"jobs": 40, "node_hours": 6.0}
                           for p in parts)


def test_the_dry_run_prints_a_job_per_partition_and_writes_nothing(tmp_path, capsys):
    rc, out = _init(tmp_path, DATA / "pbs", "--dry-run")
    printed = capsys.readouterr().out
    assert rc == 0 and not out.exists()
    assert printed.count("#PBS -N sentinel-discover") == 2
    assert "#PBS -q dssc_gpu" in printed and "#PBS -l select=1:ncpus=48" in printed


def test_module_listings_of_lmod_and_tcl_modules_are_read():
    lmod = "/opt/modulefiles:\nintel-mpi/\nintel-mpi/2021.18.1\nopenmpi/4.1.4(default)\ngcc/12\n"
    tcl = "/usr/share/modulefiles:\n-------- x --------\nmpich/4.0.2\nopenmpi/4.1.4\n"
    assert discover.parse_module_avail(lmod) == ["intel-mpi", "intel-mpi/2021.18.1",
                                                 "openmpi/4.1.4", "gcc/12"]
    assert discover.parse_module_avail(tcl) == ["mpich/4.0.2", "openmpi/4.1.4"]
    assert all(discover.MPI_MODULE.match(n.split("/")[0]) for n in
               ("openmpi/4", "OpenMPI/4", "intel-oneapi-mpi/2021", "impi/2019", "mpich/4"))
    assert not discover.MPI_MODULE.match("mpi4py") and not discover.MPI_MODULE.match("gcc")


def test_a_job_that_gets_fewer_cpus_than_its_node_is_described_with_those():
    report = json.loads((DATA / "slurm" / "discover-two.json").read_text())
    processor, note = job_processor(report["processor"], len(report["job_cpus"]))
    assert processor["num_cpus"] == 1 and processor["topology"]["numa_nodes"] == ["0x1"]
    assert "caches" not in processor["topology"] and "1 of its 2 CPUs" in note
    whole = json.loads((DATA / "slurm" / "discover-one.json").read_text())
    processor, note = job_processor(whole["processor"], len(whole["job_cpus"]))
    assert processor["num_cpus"] == 2 and note == ""


def _module_init(tmp_path: Path, body: str) -> str:
    init = tmp_path / "init.sh"
    init.write_text(f"module() {{ {body}; }}\n")
    return str(init)


def test_a_module_system_that_errors_is_named_and_one_that_lists_is_read(tmp_path):
    problems: list[str] = []
    failing = _module_init(tmp_path, 'echo "Lmod has detected the following error: '
                                     'MODULEPATH is unreadable" >&2; return 1')
    assert discover.mpi_modules(failing, problems) == []
    assert problems == ["module -t avail failed (exit 1): Lmod has detected the following "
                        "error: MODULEPATH is unreadable"]
    problems.clear()
    listing = _module_init(tmp_path, r'printf "/m:\nopenmpi/4.1.4\ngcc/12\n" >&2')
    assert discover.mpi_modules(listing, problems) == ["openmpi/4.1.4"] and problems == []


def test_an_mpi_on_one_partition_only_is_declared_there_and_for_the_system_after_it():
    reports = {p: json.loads((DATA / "slurm" / f"discover-{p}.json").read_text())
               for p in ("one", "two")}
    reports["two"]["stacks"] = [s for s in reports["two"]["stacks"] if s["family"] != "mpich"]
    parts = scheduler.partitions(_answer("slurm"))
    site = writer.build(writer.Site("s", "slurm"), parts,
                        {j.label: (j, reports[j.label]) for j in jobs.jobs_of(parts)})
    mpich = [e["target_systems"] for e in site.environments if e["name"] == "mpich"]
    # its partition's entry first; the system's after it, for --system s:one (ReFrame #1453)
    assert mpich == [["s:one"], ["s"]]
    environs = {p["name"]: p["environs"] for p in site.partitions}
    assert "mpich" in environs["one"] and "mpich" not in environs["two"]
    assert [e["target_systems"] for e in site.environments if e["name"] == "openmpi"] == [["s"]]


def test_a_node_of_many_cores_is_written_as_a_call_that_gives_the_same_masks(tmp_path):
    report = json.loads((DATA / "slurm" / "discover-one.json").read_text())
    cores = [hex(1 << c) for c in range(128)]
    report["processor"].update(num_cpus=128, num_cpus_per_socket=64, num_sockets=2)
    report["processor"]["topology"] = {"numa_nodes": [hex((2**64 - 1) << (64 * s))
                                                      for s in range(2)],
                                       "sockets": [hex((2**64 - 1) << (64 * s))
                                                   for s in range(2)], "cores": cores}
    report["job_cpus"] = list(range(128))
    parts = scheduler.partitions(_answer("slurm"))
    site = writer.build(writer.Site("s", "slurm"), parts,
                        {j.label: (j, report) for j in jobs.jobs_of(parts)})
    text = writer.render(site, "now", "sentinel init --name s", "^login$")
    assert text.count("_one_cpu_each(128)") == 2 and len(text.splitlines()) < 140
    (tmp_path / "s.py").write_text(text)
    written = runpy.run_path(str(tmp_path / "s.py"))["system"]["partitions"]
    assert all(p["processor"]["topology"]["cores"] == cores for p in written)
    # a node with two hardware threads a core keeps its list as detected
    report["processor"]["topology"]["cores"] = [hex(3 << (2 * c)) for c in range(64)]
    site = writer.build(writer.Site("s", "slurm"), parts,
                        {j.label: (j, report) for j in jobs.jobs_of(parts)})
    assert "_one_cpu_each" not in writer.render(site, "now", "cmd", "^login$")


def _today(partition: str) -> dict:
    """The partition's discovery report with Open MPI 5.0 and MPICH 5.0 as its MPIs."""
    report = json.loads((DATA / "slurm" / f"discover-{partition}.json").read_text())
    for stack in report["stacks"]:
        stack["version"] = {"openmpi": "5.0.11", "mpich": "5.0.2"}.get(stack["family"],
                                                                        stack["version"])
    return report


def _extras(report: dict, partition: str) -> dict[str, dict]:
    parts = [p for p in scheduler.partitions(_answer("slurm")) if p.name == partition]
    site = writer.build(writer.Site("s", "slurm"), parts,
                        {j.label: (j, report) for j in jobs.jobs_of(parts)})
    return {e["extras"]["mpi_family"]: e["extras"] for e in site.environments}


def test_open_mpi_5_and_mpich_5_run_with_their_own_launcher_in_the_allocation():
    report = _today("one")
    report["launch"]["pmi"] = ["pmi2"]  # no PMIx in srun: Open MPI 5's mpirun needs none
    extras = _extras(report, "one")
    assert extras["openmpi"]["launcher"] == "mpirun" and "launcher_options" not in extras["openmpi"]
    assert extras["mpich"]["launcher"] == "mpiexec" and "launcher_options" not in extras["mpich"]
    assert "launcher" not in extras["intelmpi"]  # srun with Slurm's PMI-2
    assert extras["intelmpi"]["launcher_options"] == ["--mpi=pmi2", "--kill-on-bad-exit=1"]
    # where a job gets one of a node's two CPUs, srun: it binds within the job's CPUs
    part = _extras(_today("two"), "two")
    assert "launcher" not in part["openmpi"] and "launcher" not in part["mpich"]
    assert part["openmpi"]["launcher_options"][0] == "--mpi=pmix"
    # 4.1 and 4.0 under srun, as before
    assert slurm.own_launcher("openmpi", "4.1.4", True) is None
    assert slurm.own_launcher("mpich", "4.0.2", True) is None
    assert slurm.own_launcher("openmpi", "5.0.11", True) == "mpirun"
