"""Intel MPI Benchmarks (IMB-MPI1 2021) output.

One output holds one table per benchmark and process count, after
``# Benchmarking <name>`` and ``# #processes = N``. Point-to-point tables
have ``t[usec]`` (and ``Mbytes/sec``); collectives ``t_min``/``t_max``/
``t_avg``; IMB-RMA times each benchmark twice, a table per ``#    MODE:
NON-AGGREGATE`` (each operation completed on its own) and ``AGGREGATE``
(all of a sample's operations completed together). A complete run ends
with ``# All processes entering MPI_Finalize``.
A size IMB stopped timing because its ``-time`` budget was spent is a row
``<bytes> time-out.; ...``: recorded as the table's cut, never as a value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sentinel.errors import SentinelError
from sentinel.parsers import split_at

_BENCH = re.compile(r"^# Benchmarking (\S+)")
_PROCS = re.compile(r"^# #processes = (\d+)")
_MODE = re.compile(r"^#\s+MODE: (\S+)")
_HEADER = re.compile(r"^\s*#bytes\s|^\s*#repetitions\s")
_TIMEOUT = re.compile(r"^\s*\d+\s+time-out")
_FINALIZE = "# All processes entering MPI_Finalize"
_TITLE = re.compile(r"^#\s+Intel\(R\) MPI Benchmarks")


@dataclass
class ImbTable:
    """One benchmark at one process count."""

    benchmark: str
    processes: int
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, float]] = field(default_factory=list)
    #: The first message size IMB did not time (its ``-time`` budget spent), or None.
    cut_at: int | None = None
    #: IMB-RMA's mode (``NON-AGGREGATE``, ``AGGREGATE``); ``""`` for the others.
    mode: str = ""

    def column(self, name: str) -> dict[int, float]:
        """Message size -> value of column ``name`` (e.g. ``t_avg[usec]``)."""
        if name not in self.columns:
            raise SentinelError(f"IMB {self.benchmark}: no column {name!r} "
                                f"(columns: {', '.join(self.columns)})")
        if "#bytes" not in self.columns:  # Barrier: no message size
            return {0: self.rows[-1][name]} if self.rows else {}
        return {int(r["#bytes"]): r[name] for r in self.rows}

    @property
    def time_column(self) -> str:
        """``t[usec]`` for point-to-point tables, ``t_avg[usec]`` for collectives."""
        return "t[usec]" if "t[usec]" in self.columns else "t_avg[usec]"


@dataclass
class ImbOutput:
    """All tables of one IMB run."""

    tables: list[ImbTable]
    complete: bool

    def table(self, benchmark: str, processes: int | None = None,
              mode: str = "") -> ImbTable:
        """The table of ``benchmark`` (at the largest process count by default; in ``mode``)."""
        found = [t for t in self.tables if t.benchmark == benchmark and t.mode == mode
                 and (processes is None or t.processes == processes)]
        if not found:
            have = sorted({f"{t.benchmark}@{t.processes}{f' {t.mode}' if t.mode else ''}"
                           for t in self.tables})
            raise SentinelError(f"IMB output has no {benchmark} table"
                                f"{'' if processes is None else f' for {processes} processes'}"
                                f"{f' in mode {mode}' if mode else ''}"
                                f" (has: {', '.join(have) or 'none'})")
        return max(found, key=lambda t: t.processes)


def parse(text: str, source: str = "output") -> ImbOutput:
    """Parse an IMB-MPI1 output; errors name the source and line."""
    tables: list[ImbTable] = []
    current: ImbTable | None = None
    complete = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        if m := _BENCH.match(line):
            current = ImbTable(m.group(1), 0)
            tables.append(current)
        elif (m := _PROCS.match(line)) and current is not None:
            if current.processes:  # a new process count of the same benchmark
                current = ImbTable(current.benchmark, 0)
                tables.append(current)
            current.processes = int(m.group(1))
        elif (m := _MODE.match(line)) and current is not None:
            current.mode = m.group(1)
        elif current is not None and _HEADER.match(line):
            current.columns = line.split()
        elif line.startswith(_FINALIZE):
            complete = True
        elif current is not None and current.columns and line.strip()[:1].isdigit():
            if _TIMEOUT.match(line):
                current.cut_at = int(line.split()[0])
            elif current.cut_at is None:
                current.rows.append(_row(current, line, source, lineno))
    if not tables:
        raise SentinelError(f"{source}: not an IMB output (no '# Benchmarking' line)")
    for t in tables:
        if not t.rows and t.cut_at is None:
            raise SentinelError(f"{source}: IMB {t.benchmark} ({t.processes} processes) "
                                "has no result rows (truncated output?)")
    return ImbOutput(tables, complete)


def split(text: str) -> list[str]:
    """The outputs of several IMB launches in one text, each from its title line on.

    Line numbers are kept, as :func:`sentinel.parsers.osu.split` keeps them.
    """
    return split_at(text, _TITLE)


def parse_complete(text: str, source: str = "output") -> ImbOutput:
    """:func:`parse`, then :func:`require_complete`: one launch's whole output."""
    out = parse(text, source)
    require_complete(out, source)
    return out


def _row(table: ImbTable, line: str, source: str, lineno: int) -> dict[str, float]:
    tokens = line.split()
    if len(tokens) != len(table.columns):
        raise SentinelError(f"{source}:{lineno}: IMB {table.benchmark}: expected "
                            f"{len(table.columns)} columns, got {len(tokens)}: "
                            f"{line.strip()!r} (truncated output?)")
    try:
        return {c: float(t) for c, t in zip(table.columns, tokens)}
    except ValueError:
        raise SentinelError(f"{source}:{lineno}: IMB {table.benchmark}: non-numeric "
                            f"value in {line.strip()!r}") from None


def require_complete(out: ImbOutput, source: str = "output") -> None:
    """Raise unless IMB reached MPI_Finalize (else the run was cut short)."""
    if not out.complete:
        last = out.tables[-1]
        size = int(last.rows[-1].get("#bytes", 0)) if last.rows else "none"
        raise SentinelError(f"{source}: IMB output is truncated: no '{_FINALIZE}' line "
                            f"(last table: {last.benchmark} at {last.processes} processes, "
                            f"last size {size})")
