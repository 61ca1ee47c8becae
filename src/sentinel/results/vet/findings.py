"""What one measurement of a partition's nodes named, read from its ReFrame run report.

Three kinds of test case name a node: a node-local check run on every
node at once (``each_node``, the vet mode) whose ``node_verdicts`` name it
(``node v2: ...``), one pinned to it by ``--distribute`` (``%.nid=NODE``)
that failed, and a fabric pairs sweep (FabricCheck) whose outliers name it
(``node m2: ...``). A
sweep's slow links are listed but name no node, and a sweep whose
partition level is in doubt ("more than a third of the nodes look slow")
names none: a partition-wide shift is a change, not a bad node. The doubt
is that sweep's (one of several repeats, or one transport's): the others
still count.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from sentinel.results.verdicts import last_attempts

_NID = re.compile(r" %\.nid=(\S+)")
_NODE = re.compile(r"^node (\S+): (.*)$")
_DOUBT = re.compile(r"^\w+: more than a third of the")


@dataclass(frozen=True)
class Finding:
    """One node named by one test case: the check, what failed, and the session."""

    node: str
    where: str  # system:partition
    check: str
    what: str
    session: str

    def reason(self) -> str:
        """The scheduler's drain reason: check, figure, session (one line, bounded)."""
        what = " ".join(self.what.split())
        text = f"{self.check}: {what}"
        return f"{text[:160]} (session {self.session[:8]})"


@dataclass
class Measured:
    """What the measurements named: findings, nodes measured, links and doubts."""

    findings: list[Finding] = field(default_factory=list)
    nodes: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)

    def named(self) -> dict[str, list[Finding]]:
        """Each named node and its findings."""
        out: dict[str, list[Finding]] = {}
        for f in self.findings:
            out.setdefault(f.node, []).append(f)
        return out

    def add(self, other: Measured) -> None:
        """Merge another measurement's findings into this one."""
        self.findings += other.findings
        self.nodes |= other.nodes
        self.links += other.links
        self.doubts += other.doubts
        self.sessions += other.sessions


def measured(report: dict) -> Measured:
    """The nodes one run report measured and named."""
    session = report.get("session_info", {}).get("uuid", "")
    out = Measured(sessions=[session])
    for tc in last_attempts(report):
        where = f"{tc.get('system')}:{tc.get('partition')}"
        check = tc["name"].split()[0]
        nid = _NID.search(tc.get("display_name") or tc["name"])
        if nid:
            out.nodes.add(nid.group(1))
            if tc.get("result") in ("fail", "abort"):
                out.findings.append(Finding(nid.group(1), where, check,
                                            first_line(tc.get("fail_reason")), session))
            continue
        if tc.get("nodes_vetted"):  # an each-node job: its nodes, each judged
            out.nodes |= set(tc["nodes_vetted"].split())
            out.findings += [Finding(node.group(1), where, check, node.group(2), session)
                             for node in map(_NODE.match,
                                             (tc.get("node_verdicts") or "").splitlines())
                             if node]
            continue
        if check != "FabricCheck" or tc.get("result") == "skip":
            continue
        out.nodes |= _swept(tc)
        lines = (tc.get("outliers") or "").splitlines()
        doubt = [line for line in lines if _DOUBT.match(line)]
        if doubt:  # this sweep's level is in doubt: what it named does not count
            out.doubts += [f"{where} {check}: {line}; its nodes are not counted"
                           for line in doubt]
            continue
        for line in lines:
            node = _NODE.match(line)
            if node:
                out.findings.append(Finding(node.group(1), where, check, node.group(2),
                                            session))
            elif line.startswith("link "):
                out.links.append(f"{where} {check}: {line}")
    return out


def _swept(tc: dict) -> set[str]:
    """The nodes a sweep measured, from its own pairs (``fabric_pairs``).

    Not ReFrame's ``job_nodelist``: the squeue backend leaves it partial or
    empty for a job that ended before its first poll (a second sweep here
    listed one node of four). A sweep that measured no pair measured no node.
    """
    try:
        pairs = json.loads(tc.get("fabric_pairs") or "[]")
    except json.JSONDecodeError:
        return set()
    return {str(node) for pair in pairs for node in pair[:2]}


def first_line(text: str | None) -> str:
    """The first line of a failure's reason ('failed' when it has none)."""
    lines = (text or "failed").strip().splitlines()
    return lines[0] if lines else "failed"
