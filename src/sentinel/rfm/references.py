"""References per partition from ``config/references/<system>.yaml`` through ``$ref``."""

from __future__ import annotations

import functools
from pathlib import Path

import reframe as rfm
import reframe.utility.typecheck as typ
import yaml
from reframe.core.builtins import run_before, variable

from sentinel.errors import SentinelError
from sentinel.paths import references_dir


class Requirements(rfm.RegressionTestPlugin):
    """What a combination needs to run; a check with references narrows it in an acceptance."""

    def runs_transport(self, transport: str) -> bool:
        """Whether this combination over ``transport`` is to run (here: always)."""
        return True

    def required_by(self) -> str:
        """What narrowed :meth:`runs_transport`, for a skip message ("" when nothing did)."""
        return ""


class PartitionReferences(Requirements):
    """References per partition from ``config/references/<system>.yaml``.

    The file is indexed by ``$partition``, ``$environ``, ``transport_name``
    and ``mapping``. A combination without an entry gets no reference: that
    is said in :attr:`reference_status` (in perflogs and run reports). With
    :attr:`require_partition_reference` set (the acceptance mode) the file
    is the site's requirements: a combination it does not cover is skipped,
    saying so, and a system without the file fails.
    """

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

    @run_before("run")
    def load_references(self) -> None:
        """Point ReFrame at this system's reference file and record what was found.

        A packed job has none: its transports' tests carry the references.
        Where they must have one (acceptance) and the file is missing, it
        fails as they would, before its job runs for nothing.
        """
        if getattr(self, "is_packed_job", False):
            path = references_dir() / f"{self.current_system.name}.yaml"
            if self.require_partition_reference and not path.exists():
                raise SentinelError(f"a reference is required (acceptance): {path} does not "
                                    "exist")
            self.reference_status = "packed job: the references are its transports' tests'"
            return
        self.reference_index_names = "/".join(self.reference_index)
        self.reference_index_values = "/".join(self._index_value(k)
                                               for k in self.reference_index)
        name = f"{self.current_system.name}.yaml"
        path = references_dir() / name
        if not path.exists():
            self._no_reference(f"{path} does not exist")
            return
        self.reference = {"$ref": str(path)}
        key = self.reference_index_values
        try:
            entry = self.reference[self]
        except KeyError:
            if not self.require_partition_reference:
                self._no_reference(f"{path} has no entry for {key}")
            elif self.runs_transport(self.transport_name):  # a required test takes its results
                self.reference_status = (f"no reference: {path} has no entry for {key}; run "
                                         "for a required test that takes its results")
            else:  # an acceptance runs what its file requires
                self.skip(f"not among the requirements of {self.current_system.name}: {path} "
                          f"has no entry for {key} (the acceptance runs what the reference "
                          "file covers)")
        else:
            self.reference_status = f"{path}: {key}"
            self.referenced_variables = sorted(entry)
            self.reference_entry = {name: [str(x) for x in entry[name]] for name in sorted(entry)}

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
        self.reference_status = f"no reference: {why}"
        if self.require_partition_reference:
            raise SentinelError(f"a reference is required (acceptance): {why}")


@functools.cache
def _parsed(path: str, mtime: float) -> dict:
    with open(path) as fp:
        return yaml.safe_load(fp) or {}


def requirements_of(path: Path) -> dict:
    """The reference file at ``path``, parsed once per version of it."""
    return _parsed(str(path), path.stat().st_mtime)
