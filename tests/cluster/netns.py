"""Test nodes with a network of their own: one namespace, one link, one address each.

Two bridges in this host's namespace stand for two leaf switches: ``snbr0``
(with the host's address, 10.99.0.254/24) and ``snbr1``, joined by a veth
pair ``snsp0`` / ``snsp1``, the spine. Node k has a namespace ``sn-k`` whose
only interfaces are its loopback and ``eth0`` (10.99.0.k/24), the far end of
a veth pair ``snv-k`` plugged into leaf (k - 1) mod 2: the odd nodes hang off
``snbr0``, the even ones off ``snbr1``, so traffic between an odd and an
even node crosses the spine, as traffic between two racks of a site crosses
their switches' uplinks. Traffic between two nodes leaves one namespace over
its link, crosses its leaf (and the spine) and enters the other over its
link, so one node's link can be slowed alone (:func:`degrade`: ``tbf`` on
both ends of its veth pair, there is no netem in this kernel), and so can
the traffic between two nodes (:func:`degrade_pair`: a per-destination
``htb`` class on each), and the spine, which the flows between the leaves
share (:func:`limit_spine`: an oversubscribed uplink, one queue for all of
them). Nothing is routed beyond the bridges: the addresses are those of these
test nodes only.

Usage (root)::

    python -m tests.cluster.netns up 4     # prints the node addresses
    python -m tests.cluster.netns down 4
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

BRIDGE = "snbr0"
#: The leaf switches, by index: node k hangs off ``LEAVES[(k - 1) % 2]``.
LEAVES = (BRIDGE, "snbr1")
#: The spine's two ends: ``SPINE[i]`` is plugged into ``LEAVES[i]``.
SPINE = ("snsp0", "snsp1")
SUBNET = "10.99.0"
#: The host's address on the bridge (the Slurm controller's, for the nodes).
HOST_ADDRESS = f"{SUBNET}.254"


class NetworkError(RuntimeError):
    """A namespace, link or qdisc could not be set up; the message names the command."""


@dataclass(frozen=True)
class Node:
    """One test node's network."""

    index: int

    @property
    def namespace(self) -> str:
        """Its network namespace."""
        return f"sn-{self.index}"

    @property
    def address(self) -> str:
        """Its address on the bridge."""
        return f"{SUBNET}.{self.index}"

    @property
    def leaf(self) -> str:
        """The bridge (leaf switch) its link is plugged into."""
        return LEAVES[(self.index - 1) % len(LEAVES)]

    @property
    def link(self) -> str:
        """The host end of its veth pair (its ``eth0`` is the other end)."""
        return f"snv-{self.index}"

    def inside(self) -> list[str]:
        """The command prefix that runs a program in the node's network namespace.

        ``nsenter --net``, not ``ip netns exec``: the latter also gives the
        program a mount namespace with a /sys of its own, without the cgroup
        file system slurmd needs.
        """
        return ["nsenter", f"--net=/run/netns/{self.namespace}"]

    @property
    def hostname(self) -> str:
        """The node's host name (``m1``), as its programs see it."""
        return f"m{self.index}"

    def as_host(self, boot_id: Path, hosts: Path) -> list[str]:
        """The command prefix that runs a daemon as this node: its network, name, boot and hosts.

        A host name of its own (a UTS namespace), as a site's node has: the
        MPI libraries' logs and locality name the node, not the test host.
        And a boot ID of its own (``boot_id``, a file bind-mounted over the
        kernel's in a mount namespace): UCX takes two processes with the
        same boot ID for one machine and would carry their traffic over
        shared memory, which no two nodes of a cluster share. And the
        cluster's node names resolved (``hosts``, bind-mounted over
        /etc/hosts), as a site's DNS does: an MPI's own launcher (MPICH's
        Hydra) connects back to the node it started on by its name.
        """
        return ["unshare", "--uts", "--mount", "--propagation", "private", "--", "sh", "-c",
                f'hostname "$0" && mount --bind "$1" {BOOT_ID} && mount --bind "$2" {HOSTS} '
                '&& shift 2 && exec "$@"',
                self.hostname, str(boot_id), str(hosts), *self.inside()]


#: The kernel's boot ID, by which UCX tells machines apart.
BOOT_ID = "/proc/sys/kernel/random/boot_id"


def boot_id_file(directory: Path, node: Node) -> Path:
    """A boot ID of ``node``'s own, written under ``directory`` (for :meth:`Node.as_host`)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / node.hostname
    path.write_text(f"{uuid.uuid4()}\n")
    return path


#: The name service's file the nodes see instead of the host's.
HOSTS = "/etc/hosts"


def hosts_file(directory: Path, count: int) -> Path:
    """The host's /etc/hosts and the names of ``count`` nodes (for :meth:`Node.as_host`)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "hosts"
    own = Path(HOSTS).read_text() if Path(HOSTS).exists() else ""
    path.write_text(own.rstrip("\n") + "\n" + "".join(
        f"{node.address}\t{node.hostname}\n" for node in nodes(count)))
    return path


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise NetworkError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()}")


def nodes(count: int) -> list[Node]:
    """Nodes 1..``count``."""
    return [Node(k) for k in range(1, count + 1)]


def up(count: int) -> list[Node]:
    """The two leaves, their spine and ``count`` nodes, each in its own namespace.

    An earlier set is removed first.
    """
    down(count)
    try:
        for leaf in LEAVES:
            _run(["ip", "link", "add", leaf, "type", "bridge"])
        _run(["ip", "addr", "add", f"{HOST_ADDRESS}/24", "dev", BRIDGE])
        _run(["ip", "link", "add", SPINE[0], "type", "veth", "peer", "name", SPINE[1]])
        for leaf, end in zip(LEAVES, SPINE):
            _run(["ip", "link", "set", end, "master", leaf])
            _run(["ip", "link", "set", end, "up"])
            _run(["ip", "link", "set", leaf, "up"])
        for node in nodes(count):
            _run(["ip", "netns", "add", node.namespace])
            _run(["ip", "link", "add", node.link, "type", "veth", "peer", "name", "eth0",
                  "netns", node.namespace])
            _run(["ip", "link", "set", node.link, "master", node.leaf])
            _run(["ip", "link", "set", node.link, "up"])
            _run([*node.inside(), "ip", "addr", "add", f"{node.address}/24", "dev", "eth0"])
            _run([*node.inside(), "ip", "link", "set", "eth0", "up"])
            _run([*node.inside(), "ip", "link", "set", "lo", "up"])
    except NetworkError:
        down(count)
        raise
    return nodes(count)


def down(count: int) -> None:
    """Remove the nodes' namespaces (their veth pairs go with them), the spine and the leaves."""
    for node in nodes(count):
        subprocess.run(["ip", "netns", "del", node.namespace], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", node.link], capture_output=True, timeout=30)
    for link in (SPINE[0], *LEAVES):
        subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=30)


def degrade(node: Node, rate: str) -> None:
    """Limit ``node``'s link to ``rate`` both ways (``tbf`` on each end of its veth pair)."""
    _run(["tc", "qdisc", "replace", "dev", node.link, "root", "tbf", "rate", rate,
          "burst", "32kb", "latency", "400ms"])
    _run([*node.inside(), "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", rate,
          "burst", "32kb", "latency", "400ms"])


def degrade_pair(a: Node, b: Node, rate: str) -> None:
    """Limit the traffic between ``a`` and ``b`` to ``rate`` each way, and no other.

    No cable carries the traffic of two nodes alone (the nodes of a leaf
    share its bridge, those of two leaves the spine too):
    each node's ``eth0`` gets an ``htb`` whose default class is unlimited
    and whose class for the other node's address is limited, which is what
    a bad cable or route between two nodes looks like to the pairs sweep.
    """
    for here, there in ((a, b), (b, a)):
        tc = [*here.inside(), "tc"]
        _run([*tc, "qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb",
              "default", "1"])
        _run([*tc, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:1", "htb",
              "rate", "100gbit"])
        _run([*tc, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:2", "htb",
              "rate", rate, "ceil", rate])
        _run([*tc, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "u32",
              "match", "ip", "dst", f"{there.address}/32", "flowid", "1:2"])


def limit_spine(rate: str, latency: str = "20ms") -> None:
    """Limit the spine to ``rate`` each way: one ``tbf`` queue on each end for every flow.

    What an oversubscribed uplink without congestion control does: the
    flows between the leaves share the queue, so a stream's packets wait
    ahead of a ping's, up to ``latency`` (the longest a packet may queue).
    """
    for end in SPINE:
        _run(["tc", "qdisc", "replace", "dev", end, "root", "tbf", "rate", rate,
              "burst", "32kb", "latency", latency])


def restore_spine() -> None:
    """Remove :func:`limit_spine`'s limit."""
    for end in SPINE:
        subprocess.run(["tc", "qdisc", "del", "dev", end, "root"], capture_output=True,
                       timeout=30)


def restore(node: Node) -> None:
    """Remove :func:`degrade`'s (or :func:`degrade_pair`'s) limits from ``node``'s link."""
    subprocess.run(["tc", "qdisc", "del", "dev", node.link, "root"], capture_output=True,
                   timeout=30)
    subprocess.run([*node.inside(), "tc", "qdisc", "del", "dev", "eth0", "root"],
                   capture_output=True, timeout=30)


def unavailable(tc: bool = False) -> str | None:
    """Why per-node namespaces (with ``tc``: and their rate limits) cannot be made here.

    None when they can.
    """
    if shutil.which("ip") is None or (tc and shutil.which("tc") is None):
        return "iproute2 is not installed (apt install iproute2)"
    count = 2 if tc else 1
    try:
        made = up(count)
        if tc:
            degrade(made[0], "1gbit")
            restore(made[0])
            degrade_pair(made[0], made[1], "1gbit")
            limit_spine("1gbit")
            restore_spine()
    except (NetworkError, OSError) as err:  # no CAP_NET_ADMIN, no veth, bridge, tbf or htb
        return (f"cannot create a bridged network namespace{' with tc rate limits' if tc else ''}"
                f" here: {err}")
    finally:
        down(count)
    return None


def main(argv: list[str]) -> int:
    """``up N`` or ``down N``."""
    if len(argv) != 2 or argv[0] not in ("up", "down") or not argv[1].isdigit():
        print("usage: python -m tests.cluster.netns up|down N", file=sys.stderr)
        return 2
    count = int(argv[1])
    try:
        if argv[0] == "up":
            for node in up(count):
                print(f"{node.namespace} {node.address}")
        else:
            down(count)
    except NetworkError as err:
        print(f"netns {argv[0]}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
