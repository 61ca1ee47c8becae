"""How the mixed-mode benchmark times each point (``src/bench/hybrid``)."""

from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import variable


class TimedPoints(rfm.RegressionTestPlugin):
    """Each point timed for ``target_time`` seconds in all, shared by ``repetitions`` runs.

    The benchmark doubles the iteration count until one run lasts
    ``target_time / repetitions``, times ``repetitions`` runs of that count
    and prints their median with the order-statistics interval of the median
    (the range below 9 runs: it covers with probability 1 - 2^(1-n), 96.9 %
    at the default 6).
    """

    #: Seconds each point is timed for in all.
    #:
    #: :type: :class:`float`
    target_time = variable(float, value=1.0)

    #: Timed runs of each point (at least 6 for a 95 % interval of the median).
    #:
    #: :type: :class:`int`
    repetitions = variable(int, value=6)
