"""The test cases the nightly budget leaves for a later night (``-S deferred_file=FILE``).

``sentinel plan --mode nightly --defer FILE`` writes, for each partition of
the plan, the test cases that do not fit tonight's budget
(:func:`sentinel.results.plan.schedule`)::

    {"big_site:p00": [{"test": "FabricCheck %transport=openmpi-all ...",
                       "environ": "openmpi"}, ...], ...}

The nightly then runs with ``-S deferred_file=FILE``, and each of those test
cases skips, saying so; a malformed file is an error naming it and what is
wrong, never a silent run of everything.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from sentinel.errors import SentinelError


@functools.cache
def load(path: str) -> dict[str, frozenset[tuple[str, str]]]:
    """The deferred (test, environment) pairs of each partition in ``path``."""
    try:
        raw = json.loads(Path(path).read_text())
    except OSError as err:
        raise SentinelError(f"deferred_file {path}: cannot be read ({err.strerror})") from None
    except ValueError as err:
        raise SentinelError(f"deferred_file {path}: not JSON ({err})") from None
    if not isinstance(raw, dict):
        raise SentinelError(f"deferred_file {path}: expected an object of partitions "
                            f"(sentinel plan --defer writes one), not {type(raw).__name__}")
    out = {}
    for partition, cases in raw.items():
        if not isinstance(cases, list):
            raise SentinelError(f"deferred_file {path}: {partition!r}: expected a list of "
                                "test cases")
        pairs = set()
        for i, case in enumerate(cases):
            if not (isinstance(case, dict) and isinstance(case.get("test"), str)
                    and isinstance(case.get("environ"), str)):
                raise SentinelError(f"deferred_file {path}: {partition!r}[{i}] is {case!r}: "
                                    "expected {\"test\": ..., \"environ\": ...}")
            pairs.add((case["test"], case["environ"]))
        out[partition] = frozenset(pairs)
    return out


def deferred(path: str, partition: str, test: str, environ: str) -> bool:
    """Whether ``path`` defers ``test`` in ``environ`` on ``partition`` (``system:part``)."""
    return (test, environ) in load(path).get(partition, frozenset())
