import os
from types import SimpleNamespace

from sentinel.site.binaries import find_program


def env(extras=None, path=None):
    return SimpleNamespace(extras=extras or {},
                           env_vars={"PATH": f"{path}:$PATH"} if path else {})


def exe(d, name="IMB-MPI1"):
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text("#!/bin/sh\n")
    p.chmod(0o755)
    return str(p)


def test_order_explicit_then_extras_then_environment_path(tmp_path):
    a, b, c = (exe(tmp_path / x) for x in "abc")
    e = env({"benchmark_dirs": {"imb": str(tmp_path / "b")}}, str(tmp_path / "c"))
    assert find_program("IMB-MPI1", "imb", e, str(tmp_path / "a")).path == a
    assert find_program("IMB-MPI1", "imb", e).path == b
    assert find_program("IMB-MPI1", "imb", env(path=str(tmp_path / "c"))).path == c


def test_not_executable_is_not_found_and_reason_lists_places(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "IMB-MPI1").write_text("")
    monkeypatch.setenv("PATH", os.defpath)
    found = find_program("IMB-MPI1", "imb", env(path=str(tmp_path / "d")))
    assert found.path is None
    assert found.reason("IMB-MPI1", "openmpi") == (
        f"IMB-MPI1 not found for environment openmpi (looked in: {tmp_path / 'd'}, $PATH)")
