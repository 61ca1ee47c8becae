"""OSU Micro-Benchmarks output (5.x and 7.x, with or without ``-f``).

An OSU output is a ``# OSU MPI <name> Test v<version>`` line, a column header
starting ``# Size`` and one row per message size. OSU 7 may add a
``Validation`` column (Pass/Fail); ``-f`` adds min/max latency and
iterations. Anything else (launcher noise, ``[rc=0]`` lines) is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sentinel.errors import SentinelError
from sentinel.parsers import split_at

_TITLE = re.compile(r"^# OSU MPI(?:-\w+)? (.+?) Test v(\S+)")
_HEADER = re.compile(r"^# (Size\s|Avg Latency)")  # osu_barrier has no Size column


@dataclass
class OsuOutput:
    """One OSU benchmark's table."""

    title: str
    version: str
    columns: list[str]
    rows: list[dict[str, float | str]] = field(default_factory=list)

    def column(self, name: str) -> dict[int, float]:
        """Size -> value of the first column whose name starts with ``name``."""
        match = [c for c in self.columns if c.lower().startswith(name.lower())]
        if not match:
            raise SentinelError(f"OSU {self.title}: no column {name!r} "
                                f"(columns: {', '.join(self.columns)})")
        return {int(r["Size"]): float(r[match[0]]) for r in self.rows}

    @property
    def sizes(self) -> list[int]:
        """Message sizes in output order."""
        return [int(r["Size"]) for r in self.rows]


def _columns(header: str) -> list[str]:
    return [c.strip() for c in re.split(r"\s{2,}", header[1:].strip()) if c.strip()]


def parse(text: str, source: str = "output") -> OsuOutput:
    """Parse one OSU output; errors name the source and line."""
    out: OsuOutput | None = None
    sizeless = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        m = _TITLE.match(line)
        if m:
            out = OsuOutput(m.group(1), m.group(2), [])
            continue
        if out is None:
            continue
        if _HEADER.match(line):
            out.columns = _columns(line)
            if out.columns[0] != "Size":
                out.columns.insert(0, "Size")
                sizeless = True
            continue
        tokens = line.split()
        if not out.columns or not tokens or tokens[0].startswith("#"):
            continue
        if sizeless:  # a row is a number; other lines (another launch's) are not OSU's
            if not tokens[0].replace(".", "", 1).isdigit():
                continue
            tokens.insert(0, "0")
        if not tokens[0].isdigit():
            continue
        out.rows.append(_row(out, tokens, source, lineno))
    if out is None:
        raise SentinelError(f"{source}: not an OSU output (no '# OSU MPI ... Test' line)")
    if not out.columns:
        raise SentinelError(f"{source}: OSU {out.title}: no '# Size' column header")
    if not out.rows:
        raise SentinelError(f"{source}: OSU {out.title}: no result rows")
    return out


def split(text: str) -> list[str]:
    """The outputs of several OSU launches in one text, each from its title line on.

    Each output keeps its lines' numbers in ``text`` (the lines before it
    blank), so that an error in it names the job output's line.
    """
    return split_at(text, _TITLE)


def _row(out: OsuOutput, tokens: list[str], source: str, lineno: int) -> dict:
    if len(tokens) != len(out.columns):
        raise SentinelError(f"{source}:{lineno}: OSU {out.title}: expected "
                            f"{len(out.columns)} columns ({', '.join(out.columns)}), "
                            f"got {len(tokens)}: {' '.join(tokens)!r} (truncated output?)")
    row: dict[str, float | str] = {}
    for name, tok in zip(out.columns, tokens):
        if name.lower().startswith("validation"):
            row[name] = tok
            continue
        try:
            row[name] = float(tok)
        except ValueError:
            raise SentinelError(f"{source}:{lineno}: OSU {out.title}: {name}={tok!r} "
                                "is not a number") from None
    return row


def require_sizes(out: OsuOutput, max_size: int, source: str = "output") -> None:
    """Raise unless the table reaches ``max_size`` and every row validated."""
    if out.sizes[-1] < max_size:
        raise SentinelError(f"{source}: OSU {out.title} is truncated: last size "
                            f"{out.sizes[-1]}, expected up to {max_size}")
    failed = [int(r["Size"]) for r in out.rows
              if any(k.lower().startswith("validation") and v != "Pass"
                     for k, v in r.items())]
    if failed:
        raise SentinelError(f"{source}: OSU {out.title}: data validation failed at sizes "
                            f"{failed}")
