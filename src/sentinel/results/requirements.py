"""An acceptance's contract: every entry of the system's reference file, measured or not.

In the acceptance mode the reference file is the contract: each variable of
each entry is a requirement, whatever the session selected or could run.
:func:`contract` reads them; :func:`account` tells, for each, the test cases
of a session that measured it, or why none did: its test case was skipped
(and why), failed before it measured the value, or was never generated
(the check not selected, the partition or environment not in the session,
or the parameters not generated there). The report, the plan, the metrics
and the mail read the same accounting.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import yaml

from sentinel.analysis.variables import BASE_INDEX, all_specs, spec_of
from sentinel.errors import SentinelError
from sentinel.mpi.transports import CATALOGUE

#: The outcomes of a requirement (:attr:`Account.status`).
MEASURED, FAILED, SKIPPED, NOT_GENERATED, NO_VALUE = (
    "measured", "its test case failed", "skipped", "not generated", "no value")


@dataclass(frozen=True)
class Requirement:
    """One variable of one entry of a reference file."""

    check: str
    #: The entry's index values in the order of the check's ``$index``
    #: (``local:cpu``, ``openmpi``, ``ob1-vader``, ``socket``, ...).
    index: tuple[str, ...]
    variable: str
    entry: tuple  # [value, lower, upper, unit]

    @property
    def key(self) -> str:
        """``local:cpu/openmpi/ob1-vader/socket``: the entry's place, as test cases record it."""
        return "/".join(self.index)

    @property
    def label(self) -> str:
        """``Pt2ptCheck local:cpu/openmpi/ob1-vader/socket latency_8B``."""
        return f"{self.check} {self.key} {self.variable}"


@dataclass(frozen=True)
class Seen:
    """What the accounting needs of one test case of a session."""

    check: str
    key: str  # its index values, ``/``-separated, as :attr:`Requirement.key`
    result: str  # pass, fail, skip, abort (a dry-run: pass for what would run)
    reason: str  # why it failed or was skipped
    measured: frozenset[str] = field(default_factory=frozenset)  # variables with a value


@dataclass(frozen=True)
class Account:
    """A requirement and what the session did of it."""

    requirement: Requirement
    status: str  # MEASURED, FAILED, SKIPPED, NOT_GENERATED or NO_VALUE
    why: str = ""  # for all but MEASURED: the reason it was not measured

    @property
    def text(self) -> str:
        """``Pt2ptCheck local:cpu/... latency_8B: skipped: mapping socket needs 2 sockets...``."""
        return f"{self.requirement.label}: {self.status}: {self.why}"


def name_params(name: str) -> dict[str, str]:
    """The parameters of a test's display name (``%transport=ob1-tcp %mapping=core ...``)."""
    return dict(p.split("=", 1) for p in name.split(" %")[1:] if "=" in p)


def entry_key(check: str, where: str, environ: str, transport: str, mapping: str,
              params: dict[str, str]) -> str:
    """A test case's place in the reference file, from where it ran and its parameters.

    ``where`` is ``system:partition``; ``params`` the display name's
    parameters (``mode``, ``threads``, ... for a check with more levels).
    """
    levels = ([params.get(name, "") for name in spec_of(check).index[len(BASE_INDEX):]]
              if check in all_specs() else [])
    return "/".join([where, environ, transport, mapping, *levels])


def would_not_measure(accounts: list[Account]) -> list[Account]:
    """Of a dry-run's accounting, the requirements the selection cannot measure.

    A dry-run measures nothing: a test case that would run leaves its
    requirement without a value; those skipped, failed or never generated
    are what the run would not measure either.
    """
    return [a for a in accounts if a.status in (FAILED, SKIPPED, NOT_GENERATED)]


def digest(path: Path) -> str:
    """The sha256 of a reference file's bytes (a session records the contract it ran)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def contract(path: Path) -> list[Requirement]:
    """Every requirement of the reference file at ``path``, in the file's order.

    A file whose shape is not a reference file's (``sentinel references
    check`` says more) is an error naming the file and the place.
    """
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as err:
        raise SentinelError(f"{path}: cannot read the reference file: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise SentinelError(f"{path}: not valid YAML: {err}") from None
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise SentinelError(f"{path}: a reference file is a mapping of check names")
    out: list[Requirement] = []
    for check, section in doc.items():
        where = f"{path}: {check}"
        if not isinstance(section, dict) or not isinstance(section.get("$index"), list):
            raise SentinelError(f"{where}: a check's section is a mapping with an $index list")
        depth = len(section["$index"])
        entries = {k: v for k, v in section.items() if k != "$index"}
        out += [Requirement(str(check), index, str(name), tuple(band))
                for index, variables in _leaves(entries, depth, where)
                for name, band in variables.items()]
    return out


def _leaves(node: object, depth: int, where: str) -> Iterable[tuple[tuple[str, ...], dict]]:
    """(index values, {variable: band}) of each entry ``depth`` levels below ``node``."""
    if not isinstance(node, dict):
        raise SentinelError(f"{where}: expected a mapping, got {node!r}")
    if depth == 0:
        for name, band in node.items():
            if not (isinstance(band, list) and len(band) == 4):
                raise SentinelError(f"{where}: {name}: expected [value, lower, upper, unit], "
                                    f"got {band!r}")
        yield (), node
        return
    for key, sub in node.items():
        for index, variables in _leaves(sub, depth - 1, f"{where}/{key}"):
            yield (str(key), *index), variables


def account(requirements: list[Requirement], seen: list[Seen]) -> list[Account]:
    """Each requirement with what ``seen`` (a session's test cases) did of it.

    Measured when a test case of its check and entry has a value of its
    variable; else failed (a test case of it failed or aborted), skipped
    (each of them was skipped: their reasons), or not generated (no test
    case of it in the session: which part of the entry the session lacks).
    """
    by_key: dict[tuple[str, str], list[Seen]] = {}
    for s in seen:
        by_key.setdefault((s.check, s.key), []).append(s)
    return [_account(r, by_key.get((r.check, r.key), []), seen) for r in requirements]


def _account(req: Requirement, cases: list[Seen], seen: list[Seen]) -> Account:
    if any(req.variable in c.measured for c in cases):
        return Account(req, MEASURED)
    failed = [c for c in cases if c.result in ("fail", "abort")]
    if failed:
        return Account(req, FAILED, f"{failed[0].result} before it measured {req.variable}: "
                                    f"{failed[0].reason or 'no reason recorded'}")
    skipped = sorted({c.reason or "no reason recorded" for c in cases if c.result == "skip"})
    if skipped:
        return Account(req, SKIPPED, "; ".join(skipped))
    if cases:
        return Account(req, NO_VALUE, f"its test case ran and measured no {req.variable} "
                                      "(its sizes or options leave it out)")
    return Account(req, NOT_GENERATED, _absent(req, seen))


def _absent(req: Requirement, seen: list[Seen]) -> str:
    """Which part of a requirement's entry the session has no test case of."""
    of_check = [s for s in seen if s.check == req.check]
    if not of_check:
        return (f"no test case of {req.check} in the session (the selection left it out, "
                "or it runs on no partition here)")
    for depth, what in ((1, "partition"), (2, "environment")):
        prefix = "/".join(req.index[:depth]) + "/"
        if not any(s.key.startswith(prefix) for s in of_check):
            return (f"no test case of {req.check} on {what} {req.index[depth - 1]} in the "
                    "session (the selection left it out, or the check does not run there)")
    rest = "/".join(req.index[2:])
    if _shared_memory(req.index[2]) and req.index[3] == "node":
        return (f"{req.index[2]} is shared memory: it cannot carry traffic between nodes, so "
                "no check generates it with mapping node (an entry that can never be measured)")
    return (f"no test case of {req.check} with {rest} on {req.index[0]}+{req.index[1]}: "
            "the check does not generate it there (its transports, mappings or modes)")


def _shared_memory(transport: str) -> bool:
    """Whether the catalogue's transports of this name carry traffic within a node only."""
    found = [t for t in CATALOGUE.values() if t.name == transport]
    return bool(found) and all(t.intra_node for t in found)
