"""References per partition from ``config/references/<system>.yaml`` through ``$ref``."""

from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_before, variable

from sentinel.errors import SentinelError
from sentinel.paths import references_dir


class PartitionReferences(rfm.RegressionTestPlugin):
    """References per partition from ``config/references/<system>.yaml``.

    The file is indexed by ``$partition``, ``$environ``, ``transport_name``
    and ``mapping``. A combination without an entry gets no reference: that
    is said in :attr:`reference_status` (in perflogs and run reports) and,
    with :attr:`require_partition_reference` set (the acceptance mode),
    fails the test.
    """

    #: Fail a combination that has no entry in the reference file. Unlike
    #: ReFrame's ``require_reference`` it does not demand a reference for
    #: every performance variable, only that the combination is covered.
    #:
    #: :type: :class:`bool`
    #: :default: ``False``
    require_partition_reference = variable(bool, value=False, loggable=True)

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
            self._no_reference(f"{path} has no entry for {key}")
        else:
            self.reference_status = f"{path}: {key}"
            self.referenced_variables = sorted(entry)
            self.reference_entry = {name: [str(x) for x in entry[name]] for name in sorted(entry)}

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
