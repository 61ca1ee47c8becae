"""Parsers for benchmark outputs: pure functions over text."""

from __future__ import annotations

import re


def split_at(text: str, title: re.Pattern) -> list[str]:
    """``text`` cut before each line matching ``title``; what precedes the first is dropped.

    Each piece is padded with the blank lines that keep its line numbers, so
    that an error in one launch's output names the job output's line.
    """
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if title.match(line)]
    return ["\n" * start + "\n".join(lines[start:end]) + "\n"
            for start, end in zip(starts, [*starts[1:], len(lines)])]
