"""A corrupted payload is never retried away.

A test case that fails is measured again (``--max-retries``) because a
transient slowdown does not repeat. A corruption that does not repeat is
still a link or an RDMA path that delivered wrong bytes: the retry of a test
case whose earlier attempt found one fails with what that attempt found,
even when its own payloads arrive intact.
"""

from __future__ import annotations

from collections.abc import Callable

from reframe.core import runtime

from sentinel.analysis.integrity import require_intact
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import BenchOutput

#: The corruption each test case's attempt found, until its retry reads it:
#: (test, partition, environment) -> the error.
_CORRUPTED: dict[tuple[str, str, str], str] = {}


def judge_attempt(key: tuple[str, str, str], current_run: int,
                  judge: Callable[[], None]) -> None:
    """Run ``judge`` (raising :class:`SentinelError` on a corruption) for one attempt.

    A corruption is remembered under ``key``; a retry (``current_run`` > 0)
    of a key that had one fails with it when its own payloads are intact.
    """
    earlier = _CORRUPTED.pop(key, None)
    try:
        judge()
    except SentinelError as err:
        _CORRUPTED[key] = str(err)
        raise
    if earlier and current_run > 0:
        _CORRUPTED[key] = earlier
        raise SentinelError(f"{earlier} (in the attempt before; this attempt's payloads "
                            "arrived intact: a corruption that does not repeat is still one, "
                            "and a retry does not clear it)")


class VerifiedPayloads:
    """A check whose benchmark verifies payloads (pt2pt's, the fabric's; each rma epoch)."""

    def require_intact(self, out: BenchOutput, sizes: list[int],
                       least: int | None = None) -> None:
        """Every verified payload of this attempt and of the attempts before intact.

        ``sizes`` and ``least`` as :func:`sentinel.analysis.integrity.require_intact`.
        """
        self.judge_payloads(lambda: require_intact(out, self.transport, self.verify, sizes,
                                                   least))

    def judge_payloads(self, judge: Callable[[], None]) -> None:
        """``judge`` (raising on a corruption) for this attempt, held to the attempts before."""
        key = (self.unique_name, self.current_partition.fullname, self.current_environ.name)
        judge_attempt(key, runtime.runtime().current_run, judge)
