"""Release lookup decisions: which tarball, whether it can be fetched, how it is built."""

from __future__ import annotations

import functools
import hashlib
import http.server
import socket
import threading

import pytest

from sentinel.errors import SentinelError
from sentinel.site.sources import RELEASES, file_sha256, recipe, release, unreachable


def test_pinned_releases_name_their_tarballs():
    assert RELEASES["osu"].filename == "osu-micro-benchmarks-7.1-1.tar.gz"
    assert RELEASES["imb"].filename == "IMB-v2021.3.tar.gz"
    assert all(len(r.sha256) == 64 for r in RELEASES.values())


def test_site_url_needs_its_checksum():
    with pytest.raises(SentinelError, match="without its sha256"):
        release("osu", url="file:///mirror/osu.tar.gz")
    site = release("osu", url="file:///mirror/osu.tar.gz", sha256="AB" * 32)
    assert (site.url, site.sha256, site.filename) == ("file:///mirror/osu.tar.gz", "ab" * 32,
                                                      "osu.tar.gz")


def test_unknown_suite_is_named():
    with pytest.raises(SentinelError, match="no release known for suite 'hpl'"):
        release("hpl")


def test_file_urls_are_checked_on_disk(tmp_path):
    tarball = tmp_path / "x.tar.gz"
    assert "does not exist" in unreachable(tarball.as_uri())
    tarball.write_bytes(b"x")
    assert unreachable(tarball.as_uri()) is None


def test_unsupported_scheme():
    assert "unsupported URL scheme 'ftp'" in unreachable("ftp://example.org/x.tar.gz")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_refused_connection_is_the_reason():
    why = unreachable(f"http://127.0.0.1:{_closed_port()}/x.tar.gz")
    assert why is not None and "refused" in why.lower()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_served_file_is_reachable_and_missing_one_is_not(tmp_path):
    (tmp_path / "there.tar.gz").write_bytes(b"payload")
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert unreachable(f"{base}/there.tar.gz") is None
        assert unreachable(f"{base}/missing.tar.gz") == "HTTP 404 File not found"
    finally:
        server.shutdown()


def test_file_sha256(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"abc" * 1000)
    assert file_sha256(path) == hashlib.sha256(b"abc" * 1000).hexdigest()


# The build scripts these recipes give, with the wrappers, are checked in
# tests/unit/test_checks_offline.py::test_release_builds_use_the_wrappers.
def test_build_without_cxx_names_the_setting():
    with pytest.raises(SentinelError, match="set 'cc' and 'cxx' in the environment"):
        recipe("osu", "mpicc", "")


def test_no_recipe_for_unknown_suite():
    with pytest.raises(SentinelError, match="no build recipe for suite 'hpl'"):
        recipe("hpl", "mpicc", "mpicxx")
