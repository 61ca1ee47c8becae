"""Bands learnt from a site's own nights: their arithmetic and their file.

A judged variable's band comes from a rolling baseline: its values in the
last ``window`` stored sessions of the same test case, in the same mode,
that passed. Over the logarithms of those values

    centre = median(v)
    s      = 1.4826 * MAD(ln v)                          (the nights' relative spread)
    worse  = max(floor, exp(k s) - 1, max(v)/centre 1.1 - 1)   (how much a time may grow)
           = max(floor, 1 - exp(-k s), 1 - min(v)/centre 0.9)  (how much a rate may fall)

(of five values or more, ``max`` and ``min`` leave the single worst out).

and the better side is open: a faster night is reported, never failed. A
variable whose values do not make a band (too few sessions or hours: burn-in;
zero or below) has none, and says why. Values spread over more than a
factor 2 make a wide band: the worst of them with the margin, no spread
term; it cannot catch a halving, and fails what lies beyond every night in
it (a TCP bandwidth that took 1.9 to 5.4 GB/s over five unchanged sessions
of a VM still fails at 0.3).

``sentinel baseline`` (:mod:`sentinel.results.baseline`) writes one file per
system from the results database; each test case reads its entry when it
looks up its reference (:mod:`sentinel.rfm.references`). This module is the
one definition of the file's content, for both.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sentinel.analysis.variables import HIGHER, LOWER
from sentinel.errors import SentinelError

#: The format of the file this version writes and reads.
FORMAT = 1
#: Robust multiple of the scaled MAD, the smallest tolerance, MAD to sigma.
#: ``DEFAULT_K`` is a band from one stretch of minutes (``calibrate --runs``);
#: ``BASELINE_K`` one learnt from nights, whose failures are measured again
#: before they are called: 3 (a conservative outlier rule: Leys et al.,
#: "Detecting outliers: do not use standard deviation around the mean, use
#: absolute deviation around the median", 2013). On the captured nights
#: (``benchmarks/false_alarms.py``) k 3 named a 2x regression the night it
#: began 87 % of the time against k 5's 78 %, with 21 confirmed false
#: failures in 906 judged nights against 18 in 909.
DEFAULT_K = 5.0
BASELINE_K = 3.0
DEFAULT_FLOOR = 0.20
MAD_TO_SIGMA = 1.4826
#: From this many values on, the single worst is left out of a band's extremes,
#: and the margin beyond the worst of them.
ODD_ONE_OUT = 5
WORST_MARGIN = 0.10
#: Values spread over more than this factor (1.4826 MAD of ln) make no band.
MAX_SPREAD = math.log(2)
#: The host probe's smallest tolerance: a node is slowed as a whole, and takes
#: the blame for the MPI values that failed on it, when its probe is off by
#: more than its own nights' noise and by this much (a cache line's round
#: trip moved 16 % between two quiet sessions of the development VM; a node
#: shared with a busy loop, 20 times).
HOST_FLOOR = 0.3


@dataclass(frozen=True)
class Settings:
    """How bands are learnt: the window, burn-in, width and floor."""

    #: The most recent passed sessions a band is learnt from.
    window: int = 10
    #: Burn-in: a band needs this many sessions ...
    min_sessions: int = 5
    #: ... spanning this many hours (a band from minutes samples one stretch
    #: of the machine, not its nights).
    min_span_h: float = 48.0
    k: float = BASELINE_K
    floor: float = DEFAULT_FLOOR

    def __post_init__(self) -> None:
        if self.min_sessions < 3:
            raise SentinelError(f"min_sessions {self.min_sessions}: at least 3 (a spread "
                                "needs values on both sides of the median)")
        if self.window < self.min_sessions:
            raise SentinelError(f"window {self.window} is smaller than min_sessions "
                                f"{self.min_sessions}: no band could ever be learnt")
        if self.min_span_h < 0:
            raise SentinelError(f"min_span {self.min_span_h} h: must be 0 or more")
        if self.k <= 0:
            raise SentinelError(f"k {self.k}: must be positive")
        if not 0 <= self.floor < 1:
            raise SentinelError(f"floor {self.floor}: must be in [0, 1) (a rate may not be "
                                "allowed to fall by 100 %)")


def spread(values: list[float]) -> float:
    """Relative spread of positive values: 1.4826 * MAD of their logarithms."""
    logs = [math.log(v) for v in values]
    centre = statistics.median(logs)
    return MAD_TO_SIGMA * statistics.median(abs(x - centre) for x in logs)


def tolerance(values: list[float], k: float, floor: float) -> tuple[float, float]:
    """How much worse than the median a value may be: (rate falls by, time grows by).

    The widest of: ``k`` robust spreads, the floor, and the worst of the
    values themselves with a margin of :data:`WORST_MARGIN` (of five values
    or more, the worst but one: a single odd night widens nothing). The last holds a
    level the nights took in turns (a bandwidth of 3.5 or of 7 GB/s, a lap
    of 25 or of 35 us, from one session to the next), which a median
    absolute deviation, moved by neither mode, would not.
    """
    falls, grows = quiet_tolerance(values, k, floor)
    centre = statistics.median(values)
    ordered = sorted(values)
    odd = 1 if len(ordered) >= ODD_ONE_OUT else 0
    lowest, highest = ordered[odd] / centre, ordered[-1 - odd] / centre
    return (max(falls, 1 - lowest * (1 - WORST_MARGIN)),
            max(grows, highest * (1 + WORST_MARGIN) - 1))


def wide_tolerance(values: list[float], floor: float) -> tuple[float, float]:
    """A wide band's tolerance: the worst of every value with its margin, or the floor."""
    centre = statistics.median(values)
    return (max(floor, 1 - min(values) / centre * (1 - WORST_MARGIN)),
            max(floor, max(values) / centre * (1 + WORST_MARGIN) - 1))


def unusable(values: list[float]) -> str:
    """Why ``values`` make no relative band ('' when they do)."""
    if min(values) <= 0:
        return (f"values from {min(values):.4g} to {max(values):.4g} reach 0 or below: no "
                "relative band")
    return ""


def quiet_tolerance(values: list[float], k: float, floor: float) -> tuple[float, float]:
    """The host probe's tolerance: ``k`` robust spreads or the floor, never the worst night.

    The probe's band is the node's quiet state, which a slowed node leaves: a
    slow spell the nights took in turns (this rig's cache-line round trip at
    55 ns, and at 340 ns while the hypervisor keeps the two vCPUs apart) is
    what it must name, not a level to hold, so neither the worst value nor a
    wide band widens it.
    """
    width = k * spread(values)
    return max(floor, -math.expm1(-width)), max(floor, math.expm1(width))


def too_wide(values: list[float]) -> str:
    """Why positive ``values`` make only a wide band ('' when they make a band of their spread)."""
    if spread(values) <= MAX_SPREAD:
        return ""
    return (f"values from {min(values):.4g} to {max(values):.4g} (median "
            f"{statistics.median(values):.4g}) spread over more than a factor 2 (1.4826 MAD "
            "of ln): a wide band, which cannot catch a halving and fails what lies beyond "
            "every night in it")


#: The shapes of a learnt band (:meth:`Band.learn`).
SPREAD, WIDE, QUIET = "spread", "wide", "quiet"


@dataclass(frozen=True)
class Band:
    """A learnt band: ReFrame's ``[reference, lower, upper, unit]``, the better side open."""

    reference: float
    lower: float | None
    upper: float | None
    unit: str

    @classmethod
    def learn(cls, values: list[float], better: str, unit: str, k: float,
              floor: float, shape: str = SPREAD) -> Band:
        """The band of ``values`` for a variable whose ``better`` direction is given.

        ``shape``: :data:`SPREAD` (:func:`tolerance`); :data:`WIDE`, for values
        spread over more than a factor 2 (:func:`too_wide`): the worst of
        every value with :data:`WORST_MARGIN`, no spread term; :data:`QUIET`,
        the host probe's (:func:`quiet_tolerance`).
        """
        shapes = {SPREAD: tolerance, QUIET: quiet_tolerance,
                  WIDE: lambda v, _k, f: wide_tolerance(v, f)}
        if shape not in shapes:
            raise SentinelError(f"a band's shape is one of {sorted(shapes)}, not {shape!r}")
        falls, grows = shapes[shape](values, k, floor)
        centre = float(f"{statistics.median(values):.6g}")
        if better == HIGHER:
            return cls(centre, -round(falls, 4), None, unit)
        if better == LOWER:
            return cls(centre, None, round(grows, 4), unit)
        raise SentinelError(f"a band needs a better direction, not {better!r}")

    @classmethod
    def of_entry(cls, entry: Sequence[object]) -> Band:
        """A reference entry as a test case records it: ``[reference, lower, upper, unit]``."""
        return cls(float(entry[0]), entry_number(entry[1]), entry_number(entry[2]),  # type: ignore[arg-type]
                   str(entry[3]))

    def as_list(self) -> list:
        """As ReFrame's reference tuple (a list)."""
        return [self.reference, self.lower, self.upper, self.unit]

    def worse(self, value: float) -> bool:
        """Whether ``value`` is outside the band on its closed (worse) side."""
        if self.lower is not None and value < self.reference * (1 + self.lower):
            return True
        return self.upper is not None and value > self.reference * (1 + self.upper)


#: Statuses of a learnt variable.
LEARNT = "learnt"
BURN_IN = "burn-in"
UNUSABLE = "unusable"


@dataclass
class Learnt:
    """What the baseline says of one variable of one test case."""

    status: str
    #: The band (None unless learnt).
    band: Band | None = None
    #: The sessions the band (or the burn-in so far) comes from: [uuid, start time].
    sessions: list[tuple[str, float]] = field(default_factory=list)
    #: Why there is no band, or what the reader should know (one line).
    note: str = ""
    #: A change of level the baseline did not move past (not accepted), as
    #: :func:`sentinel.results.baseline.learn` describes it; {} when none.
    change: dict = field(default_factory=dict)
    #: The change of level a person accepted, which the baseline moved past.
    accepted: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        """The file's form of it."""
        out: dict = {"status": self.status, "sessions": [list(s) for s in self.sessions]}
        if self.band is not None:
            out["band"] = self.band.as_list()
        for key in ("note", "change", "accepted"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out

    @classmethod
    def of_json(cls, data: dict, where: str) -> Learnt:
        """One variable's entry of the file; SentinelError names what is wrong."""
        try:
            band = data.get("band")
            return cls(str(data["status"]), Band(*band) if band is not None else None,
                       [(str(u), float(t)) for u, t in data.get("sessions", [])],
                       str(data.get("note", "")), dict(data.get("change") or {}),
                       dict(data.get("accepted") or {}))
        except (KeyError, TypeError, ValueError) as err:
            raise SentinelError(f"{where}: not a learnt variable ({err!r}): {data!r}") from None


def entry_number(text: object) -> float | None:
    """A number of a reference entry as a test case records it (text); None: an open bound."""
    try:
        return float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def worse_edge(entry: Sequence[object], better: str) -> tuple[float, float] | None:
    """The reference and the worse edge of ``[reference, lower, upper, unit]``.

    The worse side is the lower bound for a variable whose ``better`` is
    higher, the upper one for lower; None where that side is open or the
    reference is zero.
    """
    ref = entry_number(entry[0])
    bound = entry_number(entry[1] if better == HIGHER else entry[2])
    if not ref or bound is None or better not in (HIGHER, LOWER):
        return None
    return ref, ref * (1 + bound)


def case_key(mode: str, check: str, index_values: str) -> str:
    """The file's key of a test case: its mode, check and reference index values."""
    return f"{mode}|{check}|{index_values}"


def read(path: Path) -> dict:
    """The file at ``path``, parsed once per version of it; SentinelError if unusable."""
    try:
        stat = path.stat()
    except OSError as err:
        raise SentinelError(f"{path}: cannot be read ({err.strerror})") from None
    return _parsed(str(path), stat.st_mtime, stat.st_size)


@functools.lru_cache(maxsize=4)
def _parsed(path: str, mtime: float, size: int) -> dict:
    try:
        with open(path, "rb") as fp:
            data = json.load(fp)
    except (OSError, ValueError) as err:
        raise SentinelError(f"{path}: not a learnt baseline ({err}); write it again with "
                            "'sentinel baseline'") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SentinelError(f"{path}: not a learnt baseline of format {FORMAT}; write it "
                            "again with 'sentinel baseline'")
    return data


def entry(data: dict, key: str, where: str) -> dict[str, Learnt]:
    """The learnt variables of the test case ``key`` ({} when the file has none)."""
    case = (data.get("cases") or {}).get(key)
    if not case:
        return {}
    return {name: Learnt.of_json(value, f"{where}: {key}: {name}")
            for name, value in (case.get("variables") or {}).items()}


def learnt_when(data: dict) -> str:
    """When the file was learnt and from which database, as a reader says it."""
    at = data.get("learnt_at")
    when = (datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            if isinstance(at, (int, float)) else "at an unknown time")
    return f"learnt {when} from {data.get('results_db', 'an unknown database')}"


def write(path: Path, data: dict) -> None:
    """Write the file atomically (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
    tmp.replace(path)
