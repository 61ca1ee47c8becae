"""What ``sentinel report``, ``metrics`` and ``notify`` read: run reports and the results database.

One set of command-line arguments and one reader, so that the three say
the same of the same files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sentinel.errors import SentinelError
from sentinel.paths import output_dir, references_dir, results_db
from sentinel.results import requirements
from sentinel.results.report.files import load_reports, newest_report
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Case, Inputs
from sentinel.results.report.tables import acceptance_systems
from sentinel.results.vet import actions


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The run reports (positional) and ``--db``."""
    p.add_argument("reports", type=Path, nargs="*",
                   help="JSON run reports (default: the newest in <output>/reports)")
    p.add_argument("--db", type=Path, default=None,
                   help="results database (default $SENTINEL_RESULTS_DB or "
                        "<output>/var/results.db)")


def read(reports: list[Path], db: Path | None) -> Inputs:
    """The run reports (the newest of the output's by default) and, when given, the database.

    What cannot be used is recorded in the inputs' problems, never fatal here.
    """
    inputs = Inputs()
    load_reports(reports or newest_report(output_dir() / "reports"), inputs)
    for system, cases in acceptance_systems(inputs.cases).items():
        try:
            inputs.contracts[system] = _contract(system, cases, inputs.problems)
        except SentinelError as err:
            inputs.problems.append(f"the acceptance on {system}: {err}")
    if db is not None:
        load_history(db, inputs)
        try:
            inputs.node_actions = actions.recorded(db)
        except SentinelError as err:
            inputs.problems.append(str(err))
    return inputs


def read_args(args: argparse.Namespace) -> Inputs:
    """:func:`read` of the arguments of :func:`add_arguments`.

    A database that does not exist is not read; run reports that hold no
    test case are an error naming why.
    """
    db = args.db or results_db()
    inputs = read(args.reports, db if db.exists() else None)
    if inputs.errors or not inputs.cases:
        raise SentinelError("; ".join(inputs.errors + inputs.problems)
                            or "the run reports hold no test case")
    return inputs


def _contract(system: str, cases: list[Case],
              problems: list[str]) -> list[requirements.Requirement]:
    """The requirements of the reference file an acceptance on ``system`` ran against.

    The file its test cases recorded (else the system's in the references
    directory); one that changed since is read as it is now, saying so.
    """
    recorded = sorted({(str(c.extra.get("reference_file") or ""),
                        str(c.extra.get("reference_digest") or "")) for c in cases})
    path = Path(recorded[-1][0]) if recorded[-1][0] else references_dir() / f"{system}.yaml"
    if not path.exists():
        raise SentinelError(f"its reference file {path} does not exist: no requirement can be "
                            "counted")
    now = requirements.digest(path)
    then = {d for f, d in recorded if f == str(path) and d}
    if then and now not in then:
        problems.append(f"the acceptance on {system}: {path} changed since the session "
                        f"(sha256 {sorted(then)[0][:12]} then, {now[:12]} now): its "
                        "requirements are counted as the file is now")
    return requirements.contract(path)
