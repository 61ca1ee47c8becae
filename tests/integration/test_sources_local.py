"""The last step of the binary lookup, for real: curl, a real HTTP server, the
environment's MPI wrappers and the real ReFrame fixture chain
(FetchImb/FetchOsu -> ImbBuild/OsuBuild -> ImbSourceCheck/OsuSourceCheck)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import os
import socket
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sentinel.site.sources import RELEASES
from tests.integration.conftest import need_stack, reframe

pytestmark = pytest.mark.integration

ONE = ["-p", "openmpi$", "-E", "transport=='openmpi/ob1-vader' and mapping=='core'"]
# The quick mode excludes the source checks; these are its IMB settings.
SHORT_IMB = ["-S", "ImbSourceCheck.msglog=20", "-S", "ImbSourceCheck.iterations=100",
             "-S", "ImbSourceCheck.time_per_size=0.5", "-S", "time_limit=2m"]
SOURCES = os.environ.get("SENTINEL_TEST_SOURCES", "")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest's output to the test's own
        pass


@pytest.fixture
def www(tmp_path) -> Iterator[tuple[Path, str]]:
    """A directory served over HTTP on a free local port: (directory, base URL)."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _tarball(path: Path, files: dict[str, bytes]) -> str:
    """Write a .tar.gz holding ``files`` below one top directory; return its SHA-256."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"top/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _imb(url: str, sha: str) -> list[str]:
    return [*SHORT_IMB, "-n", "ImbSourceCheck", *ONE, "-S", f"FetchImb.url={url}",
            "-S", f"FetchImb.sha256={sha}", "-r"]


def test_unreachable_release_skips_naming_url_and_cause(tmp_path):
    need_stack("openmpi")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/IMB-v2021.3.tar.gz"
    run = reframe(_imb(url, RELEASES["imb"].sha256), tmp_path, checks=("imb.py",))
    assert run.returncode == 0, run.output[-3000:]
    assert f"imb release {url} cannot be fetched" in run.output
    assert "refused" in run.output.lower()
    assert run.case("ImbSourceCheck")["result"] == "skip"


def test_wrong_checksum_fails_the_fetch(tmp_path, www):
    need_stack("openmpi")
    root, base = www
    _tarball(root / "IMB-v2021.3.tar.gz", {"README": b"not IMB\n"})
    run = reframe(_imb(f"{base}/IMB-v2021.3.tar.gz", "0" * 64), tmp_path, checks=("imb.py",))
    assert run.returncode != 0
    fetch = run.case("FetchImb")
    assert fetch["result"] == "fail"
    assert "is not the expected " + "0" * 64 in fetch["fail_reason"]
    # ReFrame does not run what depends on a failed fixture, and says why.
    assert run.case("ImbSourceCheck")["result"] == "skip"
    assert "[dependencies failed]" in run.output


def test_tarball_that_does_not_build_fails_the_build(tmp_path, www):
    need_stack("openmpi")
    root, base = www
    sha = _tarball(root / "IMB-v2021.3.tar.gz", {"README": b"no Makefile here\n"})
    run = reframe(_imb(f"{base}/IMB-v2021.3.tar.gz", sha), tmp_path, checks=("imb.py",))
    assert run.case("FetchImb")["result"] == "pass"
    build = run.case("ImbBuild")
    assert build["result"] == "fail" and build["fail_phase"].startswith("compile")
    assert run.case("ImbSourceCheck")["result"] == "fail_deps"


def test_prebuilt_imb_wins_over_building(tmp_path, www):
    need_stack("intelmpi")
    root, base = www
    sha = _tarball(root / "IMB-v2021.3.tar.gz", {"README": b"never built\n"})
    run = reframe([*SHORT_IMB, "-n", "ImbSourceCheck", "-p", "intelmpi$", "-E",
                   "transport=='intelmpi/shm' and mapping=='core'", "-S",
                   f"FetchImb.url={base}/IMB-v2021.3.tar.gz", "-S", f"FetchImb.sha256={sha}",
                   "-r"], tmp_path, checks=("imb.py",))
    assert "a prebuilt IMB-MPI1 is used for environment intelmpi" in run.output
    assert run.case("ImbSourceCheck")["result"] == "skip"


def _release_in_sources(pattern: str) -> Path:
    found = sorted(Path(SOURCES).glob(pattern)) if SOURCES else []
    if not found:
        pytest.skip(f"no {pattern} in SENTINEL_TEST_SOURCES ('{SOURCES}'): set it to a "
                    "directory holding the release tarball to build and run it from source "
                    "(CI has no network to download it)")
    return found[-1]


def _served(tarball: Path, www) -> tuple[str, str]:
    """The tarball on the test's web server: its URL and SHA-256."""
    root, base = www
    (root / tarball.name).write_bytes(tarball.read_bytes())
    return f"{base}/{tarball.name}", hashlib.sha256(tarball.read_bytes()).hexdigest()


def test_imb_built_from_release_runs(tmp_path, www):
    need_stack("openmpi")
    url, sha = _served(_release_in_sources("IMB-v2021.*.tar.gz"), www)
    run = reframe(_imb(url, sha), tmp_path, checks=("imb.py",))
    tc = run.case("ImbSourceCheck")
    assert tc["result"] == "pass", tc.get("fail_reason")
    assert "/install/bin/IMB-MPI1" in tc["program_path"]
    perf = {k.split(":")[-1]: v for k, v in tc["perfvalues"].items()}
    assert perf["pingpong_latency_8B"][0] > 0


def test_osu_built_from_release_runs(tmp_path, www):
    need_stack("openmpi")
    url, sha = _served(_release_in_sources("osu-micro-benchmarks-*.tar.gz"), www)
    run = reframe(["--mode", "nightly", "-n", "OsuSourceCheck", *ONE[:2], "-E",
                   "transport=='openmpi/ob1-vader' and mapping=='core' and "
                   "benchmark_info[0]=='osu_latency'", "-S", f"FetchOsu.url={url}",
                   "-S", f"FetchOsu.sha256={sha}", "-r"], tmp_path, checks=("osu.py",))
    tc = run.case("OsuSourceCheck")
    assert tc["result"] == "pass", tc.get("fail_reason")
    assert "/install/libexec/osu-micro-benchmarks/mpi/pt2pt/osu_latency" in tc["program_path"]
