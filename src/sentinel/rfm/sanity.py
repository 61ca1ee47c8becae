"""The sanity path of one launch: an object the test holds (``sanity_path``).

Every launch of every check goes through the same steps, in this order,
and the first that fails is the test's failure, with its cause:

1. the binary's MPI library, where the job ran ``ldd`` (a binary of another
   MPI is the cause of what its job then shows: singleton ranks, a failed
   start);
2. a transport that cannot cross nodes stayed on one node;
3. how the job ended: killed, crashed, not started (ranks that printed
   every result and then hung in ``MPI_Finalize`` are said last, once the
   rest has been judged);
4. the library the binary ran with, now required;
5. the benchmark's output, read and complete;
6. the world size, the transport proven from the library's log, the
   placement of the ranks;
7. the check's own values, with the host probe's figures; kept.

A check supplies what is its own (its output, analysis and placement
records); the launch plan (:mod:`sentinel.rfm.launch_plan`) runs the path
once per launch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from sentinel.analysis.host import HOST_AFTER_FILE, HOST_FILE
from sentinel.analysis.variables import CheckSpec, Values
from sentinel.errors import SentinelError


class Judged(Protocol):
    """What the sanity path asks of the test whose launch it judges (the steps' methods)."""

    spec: CheckSpec
    verify_linkage: Callable[..., None]
    verify_one_node: Callable[[], None]
    verify_job_end: Callable[[], str]
    read_output: Callable[[], Any]
    verify_world: Callable[[Any], None]
    verify_transport: Callable[[Any], None]
    verify_placement: Callable[[Any], None]
    analyse: Callable[[Any], Values]
    host_figures: Callable[[CheckSpec, str | None, str | None], Values]
    stage_text: Callable[[str], str | None]
    keep_values: Callable[[Values], None]
    require_host_then_variables: Callable[[], None]


@dataclass(frozen=True)
class SanityPath:
    """A launch's sanity, step by step (the module's list); raises :class:`SentinelError`."""

    def judge(self, test: Judged) -> Values:
        """The launch's values, held by the test, once every step has passed."""
        test.verify_linkage(missing_ok=True)
        test.verify_one_node()
        hang = test.verify_job_end()
        test.verify_linkage()
        out = test.read_output()
        for verify in (test.verify_world, test.verify_transport, test.verify_placement):
            verify(out)
        values = test.analyse(out)
        values.merge(test.host_figures(test.spec, test.stage_text(HOST_FILE),
                                       test.stage_text(HOST_AFTER_FILE)))
        test.keep_values(values)
        test.require_host_then_variables()
        if hang:
            raise SentinelError(hang)
        return values
