"""The single declaration of every performance variable.

Each check family declares the variables it reports once, as a
:class:`CheckSpec`: name or name template (``latency_{size}B``), unit, which
direction is better and a one-line meaning, plus the levels of its reference
index below ``$partition/$environ/transport_name/mapping``. The analysis code
emits values through it (:class:`Values`), and the reference validator,
``sentinel calibrate`` and ``sentinel report`` read it (:func:`spec_of`,
:meth:`CheckSpec.lookup`): no other list of names, units or directions exists.

A template's fields match digits unless the declaration lists their values
(``choices``), so ``latency_{mode}_8B`` accepts only the declared modes and
``latency_fooB`` matches nothing.
"""

from __future__ import annotations

import functools
import importlib
import math
import re
import string
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from sentinel.errors import SentinelError

#: Directions: a larger value is better (bandwidth), a smaller one (time).
HIGHER = "higher"
LOWER = "lower"
#: Neither direction is better (a ratio of goodness-of-fit, a spread...):
#: shown, never called a regression or an improvement.
NEUTRAL = "neutral"

#: Units of quantities that are positive by nature: a time or a rate of zero
#: or below was not measured, whatever the arithmetic gave.
POSITIVE_UNITS = frozenset({"ns", "us", "s", "MB/s", "GB/s", "MLUP/s", "messages/s"})

#: Coverage of the intervals the analysis gives its values (see :class:`Values`).
COVERAGE = 0.95

#: Reference index levels every check has, in this order.
BASE_INDEX = ("$partition", "$environ", "transport_name", "mapping")


def _fields_match(fields: Mapping[str, str | tuple[str, ...]] | None,
                  got: dict[str, str] | None) -> bool:
    """Whether a name's field values (``got``) are among ``fields``' (None: none are)."""
    return (fields is not None and got is not None
            and all(got[k] in ((v,) if isinstance(v, str) else v) for k, v in fields.items()))


def upper_bound(lo: float, hi: float) -> float:
    """What an interval ``lo .. hi`` that reaches zero bounds a positive quantity by.

    Its top; or, with the whole interval at or below zero, its width (the
    resolution of the measurement).
    """
    return hi if hi > 0 else hi - lo


@dataclass(frozen=True)
class PerfVar:
    """One performance variable (or one family of them, by template)."""

    template: str
    unit: str
    better: str
    meaning: str
    #: Allowed values of template fields that are not numbers.
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: What a site would be paged for: judged against its band by default
    #: (:meth:`CheckSpec.judged`) and followed night after night (the
    #: report's trends and headline). The field values that make a variable
    #: a headline one (``{"size": "8"}``, or several: ``{"size": ("8",
    #: "65536")}``), ``{}`` for every variable of the template, None for none.
    headline: Mapping[str, str | tuple[str, ...]] | None = None
    #: Followed night after night beside the headline variables (the trends
    #: and the change points), never judged by default: the same form.
    followed: Mapping[str, str | tuple[str, ...]] | None = None
    #: The point-to-point curve against message size this variable is a point
    #: of (``latency`` or ``bw``), drawn with the fit of the same prefix.
    curve: str = ""
    #: The field holding the process count when the variable is a point of
    #: a series over process counts (the report draws it against them).
    scaling: str = ""
    #: Plausible range ``(low, high)`` (either None: unbounded) of a
    #: measurement of a real transport; a value outside it is unresolved.
    plausible: tuple[float | None, float | None] = (None, None)
    #: Whether the value may be zero or negative (a difference of two
    #: times); else a variable of a :data:`POSITIVE_UNITS` unit must be > 0.
    signed: bool = False

    def __post_init__(self) -> None:
        if self.better not in (HIGHER, LOWER, NEUTRAL):
            raise SentinelError(f"{self.template}: better must be {HIGHER!r}, {LOWER!r} or "
                                f"{NEUTRAL!r}, not {self.better!r}")

    @property
    def fields(self) -> tuple[str, ...]:
        """The template's field names, in order."""
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.template) if f)

    @functools.cached_property
    def pattern(self) -> re.Pattern:
        """The template as a regular expression with one named group per field."""
        return _pattern(self.template, tuple(sorted((k, tuple(v))
                                                    for k, v in self.choices.items())))

    def match(self, name: str) -> dict[str, str] | None:
        """The field values if ``name`` is one of this declaration's variables."""
        m = self.pattern.fullmatch(name)
        return m.groupdict() if m else None

    def is_headline(self, name: str) -> bool:
        """Whether ``name`` is one of the headline variables of this declaration."""
        return _fields_match(self.headline, self.match(name))

    def is_followed(self, name: str) -> bool:
        """Whether ``name`` is followed night after night: a headline or a followed one."""
        got = self.match(name)
        return _fields_match(self.headline, got) or _fields_match(self.followed, got)

    def implausible(self, value: float) -> str:
        """Why ``value`` cannot be a measurement of this variable; '' if it can."""
        if not math.isfinite(value):
            return f"{value} is not a number"
        if not self.signed and self.unit in POSITIVE_UNITS and value <= 0:
            return (f"{value:.4g} {self.unit} is not positive, so it is not a measurement "
                    f"({self.meaning})")
        low, high = self.plausible
        if low is not None and value < low:
            return f"{value:.4g} {self.unit} is below {low:g} {self.unit}, the plausible floor"
        if high is not None and value > high:
            return f"{value:.4g} {self.unit} is above {high:g} {self.unit}, the plausible ceiling"
        return ""

    def unresolved_interval(self, lo: float, hi: float) -> str:
        """Why a value with the interval ``lo .. hi`` is not resolved; '' if it is.

        A quantity positive by nature whose interval reaches zero is not
        resolved by the run: it is reported by its bound, ``< hi`` (or, with
        the whole interval at or below zero, ``< hi - lo``, the resolution).
        """
        if self.signed or self.unit not in POSITIVE_UNITS or lo > 0:
            return ""
        bound = upper_bound(lo, hi)
        return (f"< {bound:.2g} {self.unit}: its interval {lo:.3g} .. {hi:.3g} {self.unit} "
                f"includes 0 ({self.meaning})")

    def name(self, **fields: object) -> str:
        """The variable's name for these field values; a value not declared is an error."""
        name = self.template.format(**fields)
        if self.match(name) is None:
            raise SentinelError(f"{name!r} is not a valid {self.template!r} "
                                f"(fields {fields})")
        return name


#: The node itself, measured by every job of the suite's own benchmarks
#: before its launches (``src/bench/host``, :mod:`sentinel.analysis.host`):
#: every family reports them, so each is referenced and calibrated beside
#: the MPI figures it explains. Not headline variables: one node's figures
#: repeated by every test case would multiply the report's trends.
HOST_VARIABLES = (
    PerfVar("host_roundtrip", "ns", LOWER, "a cache line's round trip between two CPUs of the "
            "job's node (median over batches): what on-node latency rests on"),
    PerfVar("host_copy_bw", "GB/s", HIGHER, "memcpy bandwidth past the caches on one CPU of "
            "the job's node (median over batches): what on-node bandwidth rests on"),
)


@dataclass(frozen=True)
class Level:
    """A reference index level below the base four and the values it may take."""

    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class CheckSpec:
    """What one check family reports and how its references are indexed."""

    #: The check class registered under this name, and the variants that run
    #: the same measurement under other names (validated as their own).
    checks: tuple[str, ...]
    variables: tuple[PerfVar, ...]
    levels: tuple[Level, ...] = ()
    #: The report's figure family for these checks, by name (``curves``,
    #: ``scaling``, ``matching``...), which the report maps to its drawing:
    #: a name, so that this layer imports nothing of the report's. "" for
    #: none: the tables and trends only.
    figures: str = ""

    def __post_init__(self) -> None:
        own = tuple(v for v in self.variables if v not in HOST_VARIABLES)
        object.__setattr__(self, "variables", (*own, *HOST_VARIABLES))
        _REGISTRY.update({name: self for name in self.checks})

    @property
    def name(self) -> str:
        """The main check's name."""
        return self.checks[0]

    @property
    def index(self) -> tuple[str, ...]:
        """The ``$index`` of this family's reference entries."""
        return (*BASE_INDEX, *(lv.name for lv in self.levels))

    def lookup(self, name: str) -> PerfVar | None:
        """The declaration of the variable ``name``, or None."""
        for var in self.variables:
            if var.match(name) is not None:
                return var
        return None

    def judged(self, name: str, patterns: Sequence[str] | None = None) -> bool:
        """Whether the variable ``name`` has a band that can fail a test case.

        By default the headline variables (:attr:`PerfVar.headline`): what a
        site would be paged for. ``patterns`` (regular expressions matching
        names in full, a site's ``judged`` setting for this check) replace
        that set. The host probe's figures are never judged: they tell the
        node's fault from the MPI's (:mod:`sentinel.analysis.host`); nor is a
        variable with no better direction.
        """
        var = self.lookup(name)
        if var is None or var in HOST_VARIABLES or var.better == NEUTRAL:
            return False
        if patterns is None:
            return var.is_headline(name)
        return any(re.fullmatch(p, name) for p in patterns)

    def var(self, template: str) -> PerfVar:
        """The declaration with this template; any other is a programming error."""
        for var in self.variables:
            if var.template == template:
                return var
        raise SentinelError(f"{self.name} declares no performance variable {template!r}")


class Values(dict):
    """Performance values of one test: name -> (value, unit), emitted by declaration.

    A value may come with its interval (``lo, hi``, same unit, about
    :data:`COVERAGE` of the runs' variation: a fit's confidence interval, the
    order-statistics interval of a median): kept in :attr:`intervals`.

    A value its declaration calls implausible (:meth:`PerfVar.implausible`),
    or whose interval reaches zero (:meth:`PerfVar.unresolved_interval`), is
    not a value: it goes to :attr:`unresolved`, name -> why (with its bound
    where it has an interval), and is never reported as a number, compared
    with a reference or calibrated.
    """

    def __init__(self, spec: CheckSpec) -> None:
        super().__init__()
        self.spec = spec
        self.unresolved: dict[str, str] = {}
        self.intervals: dict[str, tuple[float, float]] = {}
        #: The coverage of each interval whose coverage is not :data:`COVERAGE`
        #: (the range of a few repetitions: ``1 - 2^(1-n)``).
        self.coverage: dict[str, float] = {}

    def put(self, template: str, value: float, interval: tuple[float, float] | None = None,
            coverage: float = COVERAGE, **fields: object) -> None:
        """Record ``value`` (within ``interval`` of ``coverage``) as ``template``, ``fields`` in."""
        var = self.spec.var(template)
        self.record(var, var.name(**fields), value, interval, coverage)

    def record(self, var: PerfVar, name: str, value: float,
               interval: tuple[float, float] | None = None,
               coverage: float = COVERAGE) -> None:
        """Record ``value`` as ``name``, a name of ``var``'s (see :meth:`put`)."""
        why = ""
        if interval is not None:
            why = var.unresolved_interval(*interval)
        why = why or var.implausible(value)
        if why:
            self.unresolve(name, why)
            return
        self[name] = (value, var.unit)
        self.unresolved.pop(name, None)
        self.coverage.pop(name, None)
        if interval is None:
            self.intervals.pop(name, None)
        else:
            self.intervals[name] = (float(interval[0]), float(interval[1]))
            if coverage != COVERAGE:
                self.coverage[name] = round(float(coverage), 4)

    def unresolve(self, name: str, why: str) -> None:
        """Report the variable ``name`` as unresolved, saying why (and its bound)."""
        self.unresolved[name] = why
        self.pop(name, None)
        self.intervals.pop(name, None)
        self.coverage.pop(name, None)

    def merge(self, other: Values) -> None:
        """Add the values, intervals and the unresolved ones of ``other``."""
        self.update(other)
        self.unresolved.update(other.unresolved)
        self.intervals.update(other.intervals)
        self.coverage.update(other.coverage)


_REGISTRY: dict[str, CheckSpec] = {}


def spec_of(check: str) -> CheckSpec:
    """The declaration of the check class named ``check``; an unknown name is an error."""
    _load_all()
    try:
        return _REGISTRY[check]
    except KeyError:
        raise SentinelError(f"no check named {check!r} declares performance variables "
                            f"(known: {', '.join(sorted(_REGISTRY))})") from None


@functools.cache
def _pattern(template: str, choices: tuple[tuple[str, tuple[str, ...]], ...]) -> re.Pattern:
    """A template as a regular expression (built once: the report matches millions of names)."""
    alternatives = dict(choices)
    out = ""
    for text, name, _, _ in string.Formatter().parse(template):
        out += re.escape(text)
        if name:
            alts = alternatives.get(name)
            body = "|".join(map(re.escape, alts)) if alts else r"\d+"
            out += f"(?P<{name}>{body})"
    return re.compile(out)


def declaration(check: str, name: str) -> PerfVar | None:
    """The declaration of variable ``name`` of check ``check``; None if either is unknown."""
    _load_all()
    spec = _REGISTRY.get(check)
    return spec.lookup(name) if spec else None


def all_specs() -> dict[str, CheckSpec]:
    """Every check name with its declaration."""
    _load_all()
    return dict(_REGISTRY)


#: The analysis modules that declare check families.
_FAMILIES = ("collectives", "congestion", "fabric", "hybrid", "jacobi", "matching", "msgrate",
             "pt2pt", "ring", "rma", "standard")


def _load_all() -> None:
    # The declarations live beside the analysis of each family; importing the
    # modules registers them.
    for family in _FAMILIES:
        importlib.import_module(f"sentinel.analysis.{family}")
