"""Debian's Prometheus and Pushgateway on loopback, for the tests: started, queried, stopped.

Both listen on 127.0.0.1 only, on ports the kernel chose free, keep their
data under one directory of the test's, and are stopped by PID. Prometheus
scrapes the Pushgateway every second (``honor_labels``: the pushed labels
are kept, as a site's configuration does for a Pushgateway).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

#: The programs, as Debian's packages install them.
PROMETHEUS, PUSHGATEWAY, PROMTOOL = "prometheus", "prometheus-pushgateway", "promtool"
NODE_EXPORTER = "prometheus-node-exporter"


def missing() -> str | None:
    """Why the tests cannot start them (None: they can)."""
    absent = [p for p in (PROMETHEUS, PUSHGATEWAY, PROMTOOL, NODE_EXPORTER)
              if shutil.which(p) is None]
    if absent:
        return (f"{', '.join(absent)} not on PATH (make test installs Debian's prometheus, "
                "prometheus-pushgateway and prometheus-node-exporter)")
    return None


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Monitoring:
    """The two daemons: their addresses and processes."""

    root: Path
    pushgateway: str = ""
    prometheus: str = ""
    procs: list[subprocess.Popen] = field(default_factory=list)

    def query(self, promql: str) -> list[dict]:
        """The result vector of an instant query through Prometheus's HTTP API."""
        url = f"http://{self.prometheus}/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql})
        with urllib.request.urlopen(url, timeout=10) as reply:
            body = json.load(reply)
        if body.get("status") != "success":
            raise RuntimeError(f"query {promql!r}: {body}")
        return body["data"]["result"]

    def wait_for(self, promql: str, timeout: float = 30.0) -> list[dict]:
        """The query's result once it is not empty (a scrape away); [] after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.query(promql)
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.5)

    def stop(self) -> None:
        """Stop both, by PID; kill what does not stop in 10 s."""
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _ready(address: str, proc: subprocess.Popen, log: Path, timeout: float = 30.0,
           path: str = "/-/ready") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited ({proc.returncode}): "
                               f"{log.read_text()[-1500:]}")
        try:
            with urllib.request.urlopen(f"http://{address}{path}", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{proc.args[0]} not ready on {address} after {timeout:.0f} s: "
                       f"{log.read_text()[-1500:]}")


def up(root: Path) -> Monitoring:
    """Start the Pushgateway and a Prometheus scraping it, under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    mon = Monitoring(root)
    try:
        mon.pushgateway = f"127.0.0.1:{free_port()}"
        log = root / "pushgateway.log"
        # Debian's default persists every push to /var/lib/prometheus: the
        # next test's Pushgateway would start with this one's metrics.
        gateway = subprocess.Popen([PUSHGATEWAY, f"--web.listen-address={mon.pushgateway}",
                                    f"--persistence.file={root / 'pushgateway.data'}"],
                                   stdout=log.open("w"), stderr=subprocess.STDOUT)
        mon.procs.append(gateway)
        _ready(mon.pushgateway, gateway, log)
        config = root / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: pushgateway\n"
            "    honor_labels: true\n"
            f"    static_configs: [{{targets: ['{mon.pushgateway}']}}]\n")
        mon.prometheus = f"127.0.0.1:{free_port()}"
        log = root / "prometheus.log"
        prom = subprocess.Popen([PROMETHEUS, f"--config.file={config}",
                                 f"--storage.tsdb.path={root / 'data'}",
                                 f"--web.listen-address={mon.prometheus}"],
                                stdout=log.open("w"), stderr=subprocess.STDOUT)
        mon.procs.append(prom)
        _ready(mon.prometheus, prom, log)
    except BaseException:
        mon.stop()
        raise
    return mon


def textfile_metrics(directory: Path, root: Path) -> str:
    """What node_exporter's textfile collector makes of ``directory``'s ``*.prom`` files.

    A node_exporter with that collector alone is started on loopback, its
    ``/metrics`` read once, and it is stopped.
    """
    address = f"127.0.0.1:{free_port()}"
    log = root / "node-exporter.log"
    proc = subprocess.Popen([NODE_EXPORTER, "--collector.disable-defaults",
                             "--collector.textfile",
                             f"--collector.textfile.directory={directory}",
                             f"--web.listen-address={address}"],
                            stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        _ready(address, proc, log, path="/metrics")
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as reply:
            return reply.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
