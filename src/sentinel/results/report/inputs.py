"""What ``sentinel report``, ``metrics`` and ``notify`` read: run reports and the results database.

One set of command-line arguments and one reader, so that the three say
the same of the same files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sentinel.errors import SentinelError
from sentinel.paths import output_dir, results_db
from sentinel.results.report.files import load_reports, newest_report
from sentinel.results.report.history import load_history
from sentinel.results.report.load import Inputs
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
