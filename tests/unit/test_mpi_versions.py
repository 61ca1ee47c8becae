"""Several installations of one MPI family: their names, detection at a prefix, Spack externals."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from sentinel.site import detect
from sentinel.site.names import environment_name
from sentinel.site.spack import externals_yaml


def test_the_first_of_a_family_is_named_by_it_and_another_by_its_version():
    taken: dict[str, tuple] = {}
    assert environment_name("openmpi", "4.1.4", ("openmpi", "/usr/bin/mpicc.openmpi"),
                            taken) == "openmpi"
    assert environment_name("openmpi", "5.0.11", ("openmpi", "/p5/bin/mpicc"),
                            taken) == "openmpi-5_0"
    assert environment_name("mpich", "5.0.2", ("mpich", "/m5/bin/mpicc"), taken) == "mpich"
    # the same installation asked again keeps its name
    assert environment_name("openmpi", "5.0.11", ("openmpi", "/p5/bin/mpicc"),
                            taken) == "openmpi-5_0"


def test_two_installations_of_one_minor_version_are_told_apart_by_the_whole_version():
    taken: dict[str, tuple] = {}
    names = [environment_name("openmpi", v, ("openmpi", cc), taken)
             for v, cc in (("5.0.10", "/a"), ("5.0.11", "/b"), ("5.0.10", "/c"),
                           ("5.0.10", "/d"))]
    assert names == ["openmpi", "openmpi-5_0", "openmpi-5_0_10", "openmpi-5_0_10-2"]


def test_mpichs_netmods_are_read_from_its_whole_device_line():
    assert detect.mpich_netmods("ch4:ucx ofi") == ["ucx", "ofi"]
    assert detect.mpich_netmods("ch4:ucx") == ["ucx"]
    assert detect.mpich_netmods("ch4:ofi") == ["ofi"]
    assert detect.mpich_netmods("ch3:nemesis") == []


def _tool(where: Path, name: str, body: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    (where / name).write_text(f"#!/bin/sh\n{body}\n")
    (where / name).chmod(0o755)


OMPI_INFO = """case "$1" in
  --version) echo 'Open MPI v5.0.11' ;;
  --parsable) printf 'mca:btl:tcp:version\\nmca:btl:sm:version\\nmca:pml:ucx:version\\n' ;;
esac"""


def test_an_open_mpi_in_a_prefix_of_its_own_is_detected_with_its_tools_alone(
        tmp_path, monkeypatch):
    prefix = tmp_path / "ompi5"
    for name in ("mpicc", "mpicxx", "mpirun"):
        _tool(prefix / "bin", name, "exit 0")
    _tool(prefix / "bin", "ompi_info", OMPI_INFO)
    (prefix / "lib" / "openmpi").mkdir(parents=True)
    empty = tmp_path / "nothing"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no Debian MPI, no ucx_info, no fi_info
    stack = detect.prefix_stack(tmp_path / "launchers", prefix)
    assert stack is not None
    assert (stack.family, stack.version) == ("openmpi", "5.0.11")
    assert stack.cc == str(prefix / "bin" / "mpicc")
    assert stack.launcher_dir == str(prefix / "bin")
    assert stack.transports == ["ob1-tcp", "ob1-sm", "ucx-sm", "ucx-tcp"]
    assert any("ucx_info is not on PATH" in d for d in stack.dropped), stack.dropped


def test_a_prefix_without_an_mpi_is_none(tmp_path):
    (tmp_path / "bin").mkdir()
    assert detect.prefix_stack(tmp_path, tmp_path) is None


@pytest.mark.parametrize("body,family", [
    ('[ "$1" = --showme:version ] && echo "mpicc: Open MPI 5.0.11 (Language: C)"', "openmpi"),
    ('[ "$1" = -v ] && echo "mpicc for MPICH version 5.0.2"; exit 1', "mpich"),
    ('[ "$1" = -v ] && echo "mpicc for the Intel(R) MPI Library 2021.18"', "intelmpi"),
    ("echo 'gcc: fatal error: no input files'; exit 1", None),
])
def test_a_compiler_wrapper_says_which_mpi_it_is(tmp_path, body, family):
    _tool(tmp_path, "mpicc", body)
    assert detect.wrapper_family(str(tmp_path / "mpicc")) == family


def _env(spec: str, prefix: str) -> SimpleNamespace:
    return SimpleNamespace(extras={"spack_external": {"spec": spec, "prefix": prefix}})


def test_two_versions_of_one_mpi_are_two_externals_of_its_package():
    text = externals_yaml([_env("openmpi@4.1.4 fabrics=ucx", "/usr"),
                           _env("mpich@4.0.2", "/var/mpich-prefix"),
                           _env("openmpi@5.0.11", "/opt/ompi5"),
                           _env("openmpi@4.1.4 fabrics=ucx", "/usr")])
    packages = yaml.safe_load(text)["packages"]
    assert packages["openmpi"]["externals"] == [
        {"spec": "openmpi@4.1.4 fabrics=ucx", "prefix": "/usr"},
        {"spec": "openmpi@5.0.11", "prefix": "/opt/ompi5"}]
    assert packages["mpich"]["externals"] == [{"spec": "mpich@4.0.2",
                                               "prefix": "/var/mpich-prefix"}]
    assert packages["openmpi"]["buildable"] is False


def test_the_distributions_open_mpi_is_read_by_its_own_tools_under_a_modules_path(
        tmp_path, monkeypatch):
    module, distro = tmp_path / "module" / "bin", tmp_path / "usr" / "bin"
    for name in ("mpicc", "mpirun"):
        _tool(module, name, "exit 0")
    _tool(module, "ompi_info", OMPI_INFO)
    for name in ("mpicc.openmpi", "mpirun.openmpi"):
        _tool(distro, name, "exit 0")
    _tool(distro, "ompi_info", OMPI_INFO.replace("v5.0.11", "v4.1.4").replace(
        "btl:sm", "btl:vader"))
    monkeypatch.setenv("PATH", f"{module}:{distro}")  # the module loaded first
    debian = detect.openmpi(tmp_path / "launchers")
    assert debian is not None
    assert (debian.version, debian.cc) == ("4.1.4", str(distro / "mpicc.openmpi"))
    assert "ob1-vader" in debian.transports and "ob1-sm" not in debian.transports
