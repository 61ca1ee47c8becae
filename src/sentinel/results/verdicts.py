"""Per-variable verdicts of a ReFrame JSON run report.

ReFrame records each performance variable of a test case as
``"<system>:<partition>:<variable>": [value, reference, lower, upper, unit,
result]`` with ``result`` "pass" or "fail" against the reference band. A
test case fails its performance stage if any of its variables fails; this
module keeps the variable-level view, so a regression names what regressed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    """One performance variable of one test case against its reference."""

    test: str           # the test case's display name
    partition: str      # system:partition
    environ: str
    variable: str
    value: float | None
    reference: float
    lower: float | None  # relative bounds as in the reference file
    upper: float | None
    unit: str
    passed: bool

    @property
    def referenced(self) -> bool:
        """Whether a reference band applies (ReFrame's default is 0, no bounds)."""
        return self.lower is not None or self.upper is not None


def attempts(report: dict) -> list[list[dict]]:
    """Each test case of ``report`` as its attempts, first to last.

    With ``--max-retries`` ReFrame adds a run per retry holding only the
    retried test cases. The copies of ``--repeat`` share a name but not a
    unique name: each is a test case of its own.
    """
    found: dict[tuple, list[dict]] = {}
    for run in report.get("runs") or []:
        for tc in run.get("testcases", []):
            key = (tc.get("unique_name") or tc["name"], tc.get("system"), tc.get("partition"),
                   tc.get("environ"))
            found.setdefault(key, []).append(tc)
    return list(found.values())


def last_attempts(report: dict) -> list[dict]:
    """Each test case of ``report`` as its last attempt (a retry replaces the earlier)."""
    return [tries[-1] for tries in attempts(report)]


def earlier(tries: list[dict]) -> list[str]:
    """What each attempt before the last ended with: ``attempt 1: fail: <reason>``."""
    return [f"attempt {i}: {tc.get('result')}: "
            f"{tc.get('fail_reason') or tc.get('fail_phase') or 'no reason recorded'}"
            for i, tc in enumerate(tries[:-1], 1)]


def verdicts(report: dict) -> list[Verdict]:
    """Every performance variable of every test case's last attempt in ``report``."""
    out = []
    for tc in last_attempts(report):
        for key, entry in (tc.get("perfvalues") or {}).items():
            system, partition, variable = key.split(":", 2)
            value, ref, lower, upper, unit, result = entry
            out.append(Verdict(tc["name"], f"{system}:{partition}", tc.get("environ", ""),
                               variable, value, ref, lower, upper, unit, result == "pass"))
    return out


def failed(report: dict) -> set[tuple[str, str]]:
    """(test case, variable) of every performance variable outside its band."""
    return {(v.test, v.variable) for v in verdicts(report) if not v.passed}
