"""Which MPI a binary runs with, from real ldd outputs (tests/data/ldd)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentinel.mpi.linkage import identify_file, linkage_problems, mpi_libraries

LDD = Path(__file__).resolve().parents[1] / "data" / "ldd"

# What each implementation embeds, as found in Debian's and Intel's libraries.
CONTENT = {
    "openmpi": b"\x7fELF...Open MPI v4.1.4, package: Debian OpenMPI...",
    "mpich": b"\x7fELF...MPICH Version:      4.0.2...",
    "intelmpi": b"\x7fELF...Intel(R) MPI Library 2021.13 for Linux* OS...MPICH...",
}


def _ldd(name: str) -> str:
    return (LDD / f"{name}.txt").read_text()


def _relocated(name: str, tmp_path: Path, content: bytes) -> str:
    """The real ldd output with its MPI library moved to a file of known content."""
    text = _ldd(name)
    (soname, path), = mpi_libraries(text)
    fake = tmp_path / soname
    fake.write_bytes(content)
    return text.replace(path, str(fake))


@pytest.mark.parametrize("name,expected", [
    ("openmpi", [("libmpi.so.40", "/lib/x86_64-linux-gnu/libmpi.so.40")]),
    ("mpich", [("libmpich.so.12", "/lib/x86_64-linux-gnu/libmpich.so.12")]),
    ("intelmpi", [("libmpi.so.12", "/work/main/.venv-impi/lib/libmpi.so.12")]),
    ("intelmpi-no-ld-path", [("libmpi.so.12", None)]),
    ("script", []),
])
def test_mpi_libraries_found_in_real_ldd_outputs(name, expected):
    assert mpi_libraries(_ldd(name)) == expected


@pytest.mark.parametrize("family", sorted(CONTENT))
def test_matching_library_verifies(tmp_path, family):
    text = _relocated(family, tmp_path, CONTENT[family])
    desc, issues = linkage_problems(family, text, "/bench/pt2pt")
    assert issues == []
    assert f"({family}, version string)" in desc


def test_intel_library_is_told_from_mpich_by_its_version_string(tmp_path):
    # Both are libmpi.so.12 (the MPICH ABI): only the content tells them apart.
    text = _relocated("intelmpi", tmp_path, CONTENT["intelmpi"])
    _, issues = linkage_problems("mpich", text, "/bench/pt2pt")
    assert issues == [f"the binary runs with intelmpi's libmpi.so.12 "
                      f"({tmp_path}/libmpi.so.12); the environment is mpich"]


def test_binary_built_with_open_mpi_fails_in_an_mpich_environment(tmp_path):
    text = _relocated("openmpi", tmp_path, CONTENT["openmpi"])
    _, issues = linkage_problems("mpich", text, "/bench/matching")
    assert len(issues) == 1
    assert "runs with openmpi's libmpi.so.40" in issues[0]
    assert issues[0].endswith("the environment is mpich")


def test_library_not_found_at_run_time_names_it():
    _, issues = linkage_problems("intelmpi", _ldd("intelmpi-no-ld-path"), "/x/IMB-MPI1")
    assert issues == ["libmpi.so.12 is not found at run time "
                      "(LD_LIBRARY_PATH of the environment?)"]


def test_unreadable_library_falls_back_to_its_soname():
    # A path that exists only on compute nodes: the soname decides.
    text = _ldd("openmpi").replace("/lib/x86_64-linux-gnu/", "/compute-only/lib/")
    desc, issues = linkage_problems("openmpi", text, "/bench/pt2pt")
    assert issues == []
    assert "(openmpi, soname; /compute-only/lib/libmpi.so.40 unreadable here" in desc
    _, issues = linkage_problems("mpich", text, "/bench/pt2pt")
    assert "runs with openmpi's libmpi.so.40" in issues[0]


def test_unreadable_mpich_abi_library_is_accepted_only_for_its_families():
    text = _ldd("intelmpi").replace("/work/main/.venv-impi/lib/", "/compute-only/lib/")
    assert linkage_problems("intelmpi", text, "/b")[1] == []
    assert linkage_problems("mpich", text, "/b")[1] == []
    _, issues = linkage_problems("openmpi", text, "/b")
    assert issues == ["libmpi.so.12 => /compute-only/lib/libmpi.so.12 is not identifiable "
                      "as any of intelmpi, openmpi, mpich (soname; /compute-only/lib/"
                      "libmpi.so.12 unreadable here: No such file or directory)"]


def test_non_dynamic_executable_is_identified_from_its_own_bytes(tmp_path):
    static = tmp_path / "osu_latency"
    static.write_bytes(CONTENT["openmpi"])
    desc, issues = linkage_problems("openmpi", _ldd("script"), str(static))
    assert (desc, issues) == ("static executable (openmpi)", [])
    script = tmp_path / "wrapper.sh"
    script.write_text("#!/bin/sh\nexec real-binary\n")
    _, issues = linkage_problems("openmpi", _ldd("script"), str(script))
    assert issues == [f"{script} links no MPI library and embeds no MPI version string"]


def test_executable_ldd_cannot_inspect_is_named():
    _, issues = linkage_problems("mpich", _ldd("missing"), "/nonexistent")
    assert issues == ["ldd could not inspect /nonexistent: "
                      "ldd: /nonexistent: No such file or directory"]


def test_empty_ldd_output_is_an_error():
    assert linkage_problems("mpich", "", "/b")[1] == ["ldd printed nothing for /b"]


def test_identify_file_reads_the_marker_anywhere(tmp_path):
    lib = tmp_path / "lib.so"
    lib.write_bytes(b"\0" * 1_000_000 + b"Open MPI" + b"\0" * 10)
    assert identify_file(str(lib)) == "openmpi"
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    assert identify_file(str(empty)) is None
