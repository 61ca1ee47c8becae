"""The suite's own benchmark output: ``SENTINEL_<KIND> key=value ...`` lines.

A complete output ends with ``SENTINEL_DONE bench=<name>``; its absence means
the run was cut short, and that is reported as such.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from sentinel.errors import SentinelError

_LINE = re.compile(r"^SENTINEL_([A-Z][A-Z0-9_]*)((?:\s+[\w.]+=\S*)*)\s*$")


@dataclass(frozen=True)
class Record:
    """One result line: its kind, fields and line number in the output."""

    kind: str
    fields: dict[str, str]
    line: int

    def text(self, key: str) -> str:
        """A field as text; a missing field is an error naming the line."""
        if key not in self.fields:
            raise self._error(f"has no field {key!r}")
        return self.fields[key]

    def number(self, key: str) -> float:
        """A field as a float ('nan' allowed); garbage is an error naming the line."""
        raw = self.text(key)
        try:
            return float(raw)
        except ValueError:
            raise self._error(f"field {key}={raw!r} is not a number") from None

    def integer(self, key: str) -> int:
        """A field as an int."""
        value = self.number(key)
        if math.isnan(value) or value != int(value):
            raise self._error(f"field {key}={value} is not an integer")
        return int(value)

    def spread(self, key: str, unit: str = "") -> tuple[float, tuple[float, float]]:
        """A median and its interval, as the benchmarks name them.

        ``<key>_<unit>`` and ``<key>_lo_<unit>`` .. ``<key>_hi_<unit>``;
        without a unit ``<key>`` and ``<key>_lo`` .. ``<key>_hi``.
        """
        u = f"_{unit}" if unit else ""
        return self.number(f"{key}{u}"), (self.number(f"{key}_lo{u}"),
                                          self.number(f"{key}_hi{u}"))

    def _error(self, problem: str) -> SentinelError:
        """``line 7: SENTINEL_<kind> <problem>``: what is wrong, and where."""
        return SentinelError(f"line {self.line}: SENTINEL_{self.kind} {problem}")


@dataclass
class BenchOutput:
    """All records of one benchmark run."""

    bench: str
    records: list[Record] = field(default_factory=list)
    done: bool = False

    def of(self, kind: str) -> list[Record]:
        """Records of one kind, in output order."""
        return [r for r in self.records if r.kind == kind]


def parse(text: str, bench: str) -> BenchOutput:
    """Collect every SENTINEL line; other lines (library logs) are ignored."""
    out = BenchOutput(bench)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.startswith("SENTINEL_"):
            continue
        m = _LINE.match(line)
        if not m:
            raise SentinelError(f"line {lineno}: malformed result line {line[:120]!r}")
        fields = dict(tok.split("=", 1) for tok in m.group(2).split())
        rec = Record(m.group(1), fields, lineno)
        if rec.kind == "DONE" and fields.get("bench") == bench:
            out.done = True
        out.records.append(rec)
    return out


def describe_error(rec: Record) -> str:
    """What a ``SENTINEL_ERROR`` line says: its fields, after a sentence where one is known.

    ``what=shared_cpus`` (``--distinct-cpus``: two ranks of one host with a
    CPU in common, found before measuring) names the ranks, CPUs and host.
    """
    detail = " ".join(f"{k}={v}" for k, v in rec.fields.items())
    f = rec.fields
    if f.get("what") == "shared_cpus" and {"ranks", "cpus", "host"} <= f.keys():
        ranks = f["ranks"].replace(",", " and ")
        return (f"ranks {ranks} share CPU(s) {f['cpus']} on host {f['host']}; the benchmark "
                f"stopped before measuring ({detail})")
    if f.get("what") == "affinity_unknown" and {"rank", "host"} <= f.keys():
        return (f"rank {f['rank']} on host {f['host']} cannot read its CPU affinity, so "
                f"distinct CPUs cannot be proven ({detail})")
    return detail


def require_complete(out: BenchOutput, source: str) -> None:
    """Raise if the benchmark reported an error or its output is truncated."""
    for rec in out.of("ERROR"):
        raise SentinelError(
            f"{source}:{rec.line}: benchmark reported an error: {describe_error(rec)}")
    if not out.done:
        last = out.records[-1].line if out.records else 0
        raise SentinelError(
            f"{source}: output of {out.bench} is truncated: no 'SENTINEL_DONE "
            f"bench={out.bench}' line (last result line: {last})"
        )


def unsupported(out: BenchOutput) -> str | None:
    """Why a threaded benchmark did not start: the library's thread level, or None."""
    found = out.of("UNSUPPORTED")
    if not found:
        return None
    rec = found[0]
    return (f"mode {rec.text('mode')} needs {rec.text('required')}; the MPI library "
            f"provides {rec.text('provided')}")


def split_launches(out: BenchOutput, stdout: str, expected: list[int]) -> dict[int, BenchOutput]:
    """One complete output per launch of a series (ranks -> records), in launch order.

    The job of a rank series holds one launch after another, each from its
    CONFIG line on. A launch that is missing or cut short is an error naming
    its rank count.
    """
    runs: list[BenchOutput] = []
    for rec in out.records:
        if rec.kind == "CONFIG":
            runs.append(BenchOutput(out.bench))
        if runs:
            runs[-1].records.append(rec)
            runs[-1].done = runs[-1].done or (rec.kind == "DONE"
                                              and rec.fields.get("bench") == out.bench)
    by_ranks = {r.of("CONFIG")[0].integer("ranks"): r for r in runs}
    for n in expected:
        if n not in by_ranks:
            raise SentinelError(f"{stdout}: no output from the {n}-rank launch "
                                f"(found launches of {sorted(by_ranks) or 'none'})")
        require_complete(by_ranks[n], f"{stdout} ({n}-rank launch)")
    return {n: by_ranks[n] for n in expected}
