"""References per partition: the reference file (``$ref``), then the learnt baseline."""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import reframe as rfm
import reframe.utility.typecheck as typ
import yaml
from reframe.core import runtime
from reframe.core.builtins import run_after, run_before, variable

from sentinel.analysis import baseline
from sentinel.analysis.baseline import Band
from sentinel.analysis.host import slowed
from sentinel.analysis.variables import HOST_VARIABLES
from sentinel.errors import SentinelError
from sentinel.paths import baselines_dir, references_dir


class Requirements(rfm.RegressionTestPlugin):
    """What a combination needs to run; a check with references narrows it in an acceptance."""

    def runs_transport(self, transport: str) -> bool:
        """Whether this combination over ``transport`` is to run (here: always)."""
        return True

    def required_by(self) -> str:
        """What narrowed :meth:`runs_transport`, for a skip message ("" when nothing did)."""
        return ""

    def measures(self) -> bool:
        """Whether this test case's values are its own (a packed job's are its members')."""
        return True


class PartitionReferences(Requirements):
    """References per partition from ``config/references/<system>.yaml``.

    The file is indexed by ``$partition``, ``$environ``, ``transport_name``
    and ``mapping``. A combination without an entry gets no reference: that
    is said in :attr:`reference_status` (in perflogs and run reports). With
    :attr:`require_partition_reference` set (the acceptance mode) the file
    is the site's requirements: a combination it does not cover is skipped,
    saying so, and a system without the file fails.
    """

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("spec", "transport_name", "unresolved")

    #: Run only the combinations the reference file covers (skipping the
    #: others, saying so) and fail when the system has no reference file.
    #: Unlike ReFrame's ``require_reference`` it does not demand a reference
    #: for every performance variable, only that the combination is covered.
    #:
    #: :type: :class:`bool`
    #: :default: ``False``
    require_partition_reference = variable(bool, value=False, loggable=True)

    def required_by(self) -> str:
        """`` required by the reference file`` in an acceptance, else ""."""
        return " required by the reference file" if self.require_partition_reference else ""

    @property
    def reference_index(self) -> tuple[str, ...]:
        """The ``$index`` of this check's entries: declared once, by its :attr:`spec`."""
        return self.spec.index

    #: Where this test's references came from, or why it has none.
    #:
    #: :type: :class:`str`
    reference_status = variable(str, value="", loggable=True)

    #: This test's place in the reference file: the ``$index`` names and this
    #: test's values for them, each ``/``-separated (``sentinel calibrate``
    #: writes references there).
    #:
    #: :type: :class:`str`
    reference_index_names = variable(str, value="", loggable=True)
    reference_index_values = variable(str, value="", loggable=True)

    #: The entry ReFrame's ``$ref`` lookup found for this test: variable ->
    #: ``[value, lower, upper, unit]`` (as text), in the run report even when
    #: the test never reached its performance stage (a failure, ``--dry-run``).
    #:
    #: :type: :class:`Dict[str, List[str]]`
    reference_entry = variable(typ.Dict[str, typ.List[str]], value={}, loggable=True)

    #: The mode whose stored sessions this test case's learnt bands come
    #: from (each mode sets it, as it marks its sessions with
    #: ``--session-extras mode=...``): a quick run's values are not a night's.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (sessions run without a mode)
    history_mode = variable(str, value="", loggable=True)

    #: Where each band of :attr:`reference_entry` came from: ``file`` (the
    #: reference file, written by hand or ``sentinel calibrate``) or
    #: ``learnt`` (the rolling baseline ``sentinel baseline`` wrote).
    #:
    #: :type: :class:`Dict[str, str]`
    reference_origin = variable(typ.Dict[str, str], value={}, loggable=True)

    #: The variables the learnt baseline has no band for yet, each with why:
    #: the burn-in of a new site or test case, or values that make no band.
    #: A judged one is provisional: recorded and reported, never failed.
    #:
    #: :type: :class:`Dict[str, str]`
    provisional = variable(typ.Dict[str, str], value={}, loggable=True)

    #: The stored sessions the learnt bands came from, ``uuid@start`` (unix s).
    #:
    #: :type: :class:`List[str]`
    baseline_sessions = variable(typ.List[str], value=[], loggable=True)

    #: Levels that changed and that nobody accepted yet: the band stays at
    #: the old level until ``sentinel accept`` moves it; variable -> what
    #: changed, and since when.
    #:
    #: :type: :class:`Dict[str, str]`
    level_changes = variable(typ.Dict[str, str], value={}, loggable=True)

    #: The variables whose band can fail this test case (set before the
    #: performance stage): the check's headline variables, or the site's
    #: ``judged`` setting (partition extras); in an acceptance, also every
    #: variable of the reference file's entry.
    #:
    #: :type: :class:`List[str]`
    judged_variables = variable(typ.List[str], value=[], loggable=True)

    #: The host probe's figures worse than their bands (the file's or the
    #: learnt ones), each with its value: the node's fault, not the MPI's;
    #: the report folds the node's failed MPI verdicts into one line with them.
    #:
    #: :type: :class:`List[str]`
    host_outside = variable(typ.List[str], value=[], loggable=True)

    #: The reference file of this test's system, and the sha256 of its bytes
    #: ('' when it does not exist), recorded when the test is made, before
    #: any skip: an acceptance's report reads every entry of that file as a
    #: requirement, measured or not, and says so when it changed since.
    #:
    #: :type: :class:`str`
    reference_file = variable(str, value="", loggable=True)
    reference_digest = variable(str, value="", loggable=True)

    @run_after("init")
    def record_reference_file(self) -> None:
        """The system's reference file and its digest (:attr:`reference_file`)."""
        path = references_dir() / f"{runtime.runtime().system.name}.yaml"
        self.reference_file = str(path)
        self.reference_digest = _digest(str(path), path.stat().st_mtime) \
            if path.exists() else ""

    @run_before("run")
    def load_references(self) -> None:
        """Find this test case's bands: the reference file's, then the learnt baseline's.

        The file's entry (an acceptance's contract, a calibration) is never
        replaced by a learnt band; an acceptance reads the file alone. A
        packed job has none: its transports' tests carry the references.
        Where they must have one (acceptance) and the file is missing, it
        fails as they would, before its job runs for nothing.
        """
        if not self.measures():
            path = references_dir() / f"{self.current_system.name}.yaml"
            if self.require_partition_reference and not path.exists():
                raise SentinelError(f"a reference is required (acceptance): {path} does not "
                                    "exist")
            self.reference_status = "packed job: the references are its transports' tests'"
            return
        self.reference_index_names = "/".join(self.reference_index)
        self.reference_index_values = "/".join(self._index_value(k)
                                               for k in self.reference_index)
        said = [self._file_references()]
        if not self.require_partition_reference:
            said.append(self._learnt_references())
        self.reference_status = "; ".join(said)
        # The file's variables must be measured (the site's word); a learnt
        # band judges a value when there is one, and an unresolved one is
        # reported with its bound.
        self.referenced_variables = sorted(n for n, o in self.reference_origin.items()
                                           if o == "file")

    def _file_references(self) -> str:
        """The reference file's entry, if any; what was found (:attr:`reference_status`)."""
        path = references_dir() / f"{self.current_system.name}.yaml"
        key = self.reference_index_values
        if not path.exists():
            self._no_reference(f"{path} does not exist")
            return f"no reference file: {path} does not exist"
        self.reference = {"$ref": str(path)}
        try:
            entry = self.reference[self]
        except KeyError:
            if not self.require_partition_reference:
                return f"no reference: {path} has no entry for {key}"
            if self.runs_transport(self.transport_name):  # a required test takes its results
                return (f"no reference: {path} has no entry for {key}; run for a required "
                        "test that takes its results")
            # an acceptance runs what its file requires
            self.skip(f"not among the requirements of {self.current_system.name}: {path} "
                      f"has no entry for {key} (the acceptance runs what the reference file "
                      "covers)")
        self.reference_entry = {name: [str(x) for x in entry[name]] for name in sorted(entry)}
        self.reference_origin = dict.fromkeys(self.reference_entry, "file")
        return f"{path}: {key}"

    def _learnt_references(self) -> str:
        """The learnt baseline's bands of what the file does not hold; what was found."""
        path = baselines_dir() / f"{self.current_system.name}.json"
        if not path.exists():
            return (f"no learnt baseline: {path} does not exist ('sentinel baseline' writes "
                    "it from the stored sessions; until then judged values are provisional)")
        data = baseline.read(path)
        key = baseline.case_key(self.history_mode, type(self).__name__,
                                self.reference_index_values)
        learnt = baseline.entry(data, key, str(path))
        entry, origin = dict(self.reference_entry), dict(self.reference_origin)
        provisional, changed, sessions = {}, {}, {}
        for name, found in learnt.items():
            if name in entry:  # the file's band is the site's word
                continue
            if found.change:
                changed[name] = found.change.get("said", "")
            if found.band is None:
                provisional[name] = found.note
                continue
            entry[name] = [str(x) for x in found.band.as_list()]
            origin[name] = "learnt"
            sessions.update(found.sessions)
        self.reference_entry, self.reference_origin = entry, origin
        self.provisional, self.level_changes = provisional, changed
        self.baseline_sessions = [f"{u}@{t:.0f}" for u, t in sorted(sessions.items(),
                                                                    key=lambda s: s[1])]
        if not learnt:
            return (f"no learnt band for {key} in {path} ({baseline.learnt_when(data)}): a "
                    "new test case, provisional until enough of its sessions passed")
        return (f"learnt baseline {path} ({baseline.learnt_when(data)}): "
                f"{sum(o == 'learnt' for o in origin.values())} band(s) from "
                f"{len(sessions)} session(s)")

    def judged_patterns(self) -> list[str] | None:
        """The site's ``judged`` setting for this check (partition extras), or None.

        A setting that is not a mapping of check names to lists of regular
        expressions is an error naming the partition and what is wrong.
        """
        where = f"partition {self.current_partition.fullname}: extras['judged']"
        setting = self.current_partition.extras.get("judged") or {}
        if not isinstance(setting, dict):
            raise SentinelError(f"{where} is {setting!r}: expected a mapping of check names "
                                "to lists of variable patterns")
        patterns = setting.get(type(self).__name__, setting.get(self.spec.name))
        if patterns is None:
            return None
        if not (isinstance(patterns, (list, tuple)) and all(isinstance(p, str) for p in patterns)):
            raise SentinelError(f"{where}[{type(self).__name__!r}] is {patterns!r}: expected a "
                                "list of regular expressions")
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as err:
                raise SentinelError(f"{where}[{type(self).__name__!r}]: {pattern!r} is not a "
                                    f"regular expression ({err})") from None
        return list(patterns)

    def _confirming(self, judged: set[str], values: dict) -> set[str]:
        """A retry judges what the attempt before it found outside its bands, alone.

        A failure is confirmed when the same value is outside its band when
        measured again; another value outside in the retry alone is the next
        session's to judge (said in ``reference_status``).
        """
        key = (self.unique_name, self.current_partition.fullname, self.current_environ.name)
        before = _OUTSIDE.pop(key, None)
        if runtime.runtime().current_run > 0 and before:
            self.reference_status += ("; measured again: judged on " + ", ".join(sorted(before))
                                      + ", outside its band in the attempt before")
            judged = judged & before
        outside = set()
        for name in judged & set(values):
            entry = self.reference_entry.get(name)
            if entry and Band.of_entry(entry).worse(values[name][0]):
                outside.add(name)
        if outside:
            _OUTSIDE[key] = outside
        return judged

    def _judges(self, name: str, patterns: list[str] | None) -> bool:
        """Whether ``name``'s band can fail this test case (:attr:`judged_variables`)."""
        return self.spec.judged(name, patterns) or (
            self.require_partition_reference and self.reference_origin.get(name) == "file")

    def judged_entry(self) -> dict[str, list[str]]:
        """The bands a node is judged by: the judged variables' and the host probe's."""
        patterns = self.judged_patterns()
        return {n: e for n, e in self.reference_entry.items()
                if n in HOST_NAMES or self._judges(n, patterns)}

    @run_before("performance")
    def judge_references(self) -> None:
        """Give ReFrame the bands of the judged variables only; the others are recorded.

        A judged variable without a band is provisional (burn-in) and cannot
        fail; the host probe's figures are never given to ReFrame (they tell
        the node's fault from the MPI's). In an acceptance every variable of
        the file's entry is a requirement.
        """
        if self.is_dry_run() or not self.measures():
            return
        patterns = self.judged_patterns()
        values = getattr(self, "values", None) or {}
        required = [n for n, o in self.reference_origin.items()
                    if o == "file" and self.require_partition_reference]
        judged = {n for n in [*values, *self.unresolved, *required] if self._judges(n, patterns)}
        judged = self._confirming(judged, values)
        self.judged_variables = sorted(judged)
        # provisional: a judged value measured tonight without a band (an
        # unresolved one is reported as such, with its bound)
        provisional = {n: why for n, why in self.provisional.items()
                       if n in judged and n in values}
        for name in (judged & set(values)) - set(self.reference_entry) - set(provisional):
            provisional[name] = ("provisional: not in the learnt baseline yet (a new site or "
                                 "test case; reference_status says more)")
        self.provisional = provisional
        bands = {n: tuple(Band.of_entry(e).as_list())
                 for n, e in self.reference_entry.items() if n in judged}
        self.reference = {self.current_partition.fullname: bands}
        after = {n: (v, self.spec.var(n).unit)
                 for n, v in (getattr(self, "host_after", None) or {}).items()}
        self.host_outside = [*slowed(values, self.reference_entry),
                             *(f"{said} (after the launches)"
                               for said in slowed(after, self.reference_entry))]

    def runs_transport(self, transport: str) -> bool:
        """Whether this combination over ``transport`` is to run: always, but in an acceptance.

        There, a combination runs when the reference file has its entry or a
        required test takes its results (:meth:`feeds_requirement`); a
        packed job runs only the transports of such members. Without the
        file every combination runs, and fails for the file.
        """
        path = references_dir() / f"{self.current_system.name}.yaml"
        if not self.require_partition_reference or not path.exists():
            return True
        doc = requirements_of(path)
        return (self.has_entry(doc.get(type(self).__name__), transport)
                or self.feeds_requirement(doc, transport))

    def has_entry(self, section: dict | None, transport: str) -> bool:
        """Whether ``section`` (a check's part of the file) has this combination's entry."""
        index = (section or {}).get("$index") or []
        data = section
        for key in index:
            value = transport if key == "transport_name" else self._index_value(key)
            found = {str(k): v for k, v in data.items()} if isinstance(data, dict) else {}
            if value not in found:
                return False
            data = found[value]
        return bool(index)

    def feeds_requirement(self, doc: dict, transport: str) -> bool:
        """Whether a test the file requires takes this one's results (here: none does)."""
        return False

    def _index_value(self, key: str) -> str:
        if key == "$partition":
            return self.current_partition.fullname
        if key == "$environ":
            return self.current_environ.name
        return str(getattr(self, key))

    def _no_reference(self, why: str) -> None:
        if self.require_partition_reference:
            raise SentinelError(f"a reference is required (acceptance): {why}")


@functools.cache
def _digest(path: str, mtime: float) -> str:
    with open(path, "rb") as fp:
        return hashlib.sha256(fp.read()).hexdigest()


@functools.cache
def _parsed(path: str, mtime: float) -> dict:
    with open(path) as fp:
        return yaml.safe_load(fp) or {}


#: What an attempt of a test case found outside its bands, for its retry to
#: confirm: (unique name, partition, environment) -> the judged variables. A
#: retry is a new instance of the test (ReFrame clones the case from the
#: original check): the process is what the attempts share.
_OUTSIDE: dict[tuple[str, str, str], set[str]] = {}

#: The host probe's variables: never judged, they attribute (:attr:`host_outside`).
HOST_NAMES = frozenset(v.template for v in HOST_VARIABLES)


def requirements_of(path: Path) -> dict:
    """The reference file at ``path``, parsed once per version of it."""
    return _parsed(str(path), path.stat().st_mtime)
