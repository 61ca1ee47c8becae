"""Skips that keep their message: ReFrame's run report alone drops it."""

from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import variable


class RecordsSkip(rfm.RegressionTestPlugin):
    """A test whose skip keeps its message in the run report (``skip_reason``).

    ReFrame 4.10's run report has no field for a skip's message; the report
    groups skips by it, and names it for the tests skipped because this one
    was (their dependents). Mixed in before ReFrame's test class, so that
    its ``skip`` is the one called.
    """

    #: Why the test case was skipped ('' when it was not).
    #:
    #: :type: :class:`str`
    skip_reason = variable(str, value="", loggable=True)

    def skip(self, msg: str | None = None) -> None:
        """Skip the test case, keeping ``msg`` in the run report (``skip_reason``)."""
        self.skip_reason = msg or ""
        super().skip(msg)
