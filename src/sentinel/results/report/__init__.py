"""``sentinel report``: one self-contained HTML report, a JSON and a CSV summary.

Built from ReFrame's JSON run reports (the verdicts, curves, matching and
Jacobi results) and its results database (trends over stored sessions).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from sentinel.results import changes
from sentinel.results.report import html, summary, tables
from sentinel.results.report.figures import by_check
from sentinel.results.report.inputs import read
from sentinel.results.report.load import Case, Inputs
from sentinel.results.vet import actions


def when(t: float) -> str:
    """A time stamp as the report prints it (UTC, to the minute)."""
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M")


@dataclass(frozen=True)
class Written:
    """What ``build`` wrote, what it could not use, and what fails the run."""

    html: Path
    json: Path
    csv: Path
    verdict: str
    headline: list[str]
    problems: list[str]  # inputs left out
    errors: list[str]    # the newest session ran no test case


#: The node actions the printed summary lists (the page lists them all).
LAST_ACTIONS = 5
#: The requirements not measured the printed summary lists (the page lists them all).
UNMEASURED_SHOWN = 20


def headline(all_rows: list[tables.Row], acc: tables.Acceptance,
             vetted: list[tables.NodeVerdict] | None = None,
             acted: list[actions.Action] | None = None,
             cases: list[Case] | None = None) -> list[str]:
    """The text summary printed at the end: verdict, the nodes that failed, the headlines."""
    lines = [f"acceptance: {acc.said}"]
    lines += [f"  not measured: {a.text}" for a in acc.unmeasured[:UNMEASURED_SHOWN]]
    if len(acc.unmeasured) > UNMEASURED_SHOWN:
        lines.append(f"  and {len(acc.unmeasured) - UNMEASURED_SHOWN} more not measured "
                     "(the page and the JSON summary list them all)")
    lines += [f"node action: {when(a.time)} {a.where} {a.node} {a.action}: {a.reason}"
              for a in (acted or [])[-LAST_ACTIONS:]]
    lines += [f"host: {h.where} {h.text}"
              for h in tables.host_slowdowns(acc, cases if cases is not None else list(
                  {id(r.case): r.case for r in all_rows}.values()))]
    if vetted:
        bad = [v for v in vetted if v.failed]
        lines.append(f"nodes vetted: {len(vetted)}, failed: "
                     + (", ".join(f"{v.where} {v.node}" for v in bad) or "none"))
        lines += [f"  {v.where} {v.node}: {f.test}: {f.reason}" for v in bad for f in v.failed]
    for r in all_rows:
        if r.var.headline and r.var.value is not None:
            interval = (f" [{r.var.interval[0]:.4g}, {r.var.interval[1]:.4g}]"
                        if r.var.interval else "")
            lines.append(f"{r.case.where:34} {r.case.check:13} {r.case.transport:12} "
                         f"{r.case.mapping:7} {r.case.variant:24} {r.var.name:16} "
                         f"{r.var.value:>10.4g} "
                         f"{r.var.unit:7} {r.verdict}{interval}")
    return lines


def build(reports: list[Path], db: Path | None, out_dir: Path) -> Written:
    """Read the inputs and write ``sentinel-report.{html,json,csv}`` under ``out_dir``.

    The page and the JSON summary list the errors after the problems, so
    that an empty newest session shows there too.
    """
    inputs = read(reports, db)
    # The inputs (a site's history: millions of objects) live until the page
    # is written: frozen, the cycle collector no longer scans them at each
    # collection, here and in the forked workers that draw the figures.
    gc.freeze()
    try:
        return _write(inputs, out_dir)
    finally:
        gc.unfreeze()


def _write(inputs: Inputs, out_dir: Path) -> Written:
    shown = replace(inputs, problems=inputs.problems + inputs.errors)
    all_rows = tables.rows(inputs.cases)
    acc = tables.acceptance(inputs.cases, inputs.contracts)
    found = changes.find(inputs.history)
    figures = by_check(inputs.cases, inputs.history, found)
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = Written(out_dir / "sentinel-report.html", out_dir / "sentinel-report.json",
                      out_dir / "sentinel-report.csv", acc.verdict,
                      headline(all_rows, acc, tables.nodes(inputs.cases), inputs.node_actions,
                               inputs.cases),
                      inputs.problems,
                      inputs.errors)
    written.html.write_text(html.page("MPI Sentinel report", generated, shown, acc,
                                      tables.transport_matrix(inputs.cases), figures, found,
                                      summary.summarise(inputs, acc, found)))
    written.json.write_text(tables.summary_json(all_rows, acc, shown.problems, inputs.cases))
    written.csv.write_text(tables.summary_csv(all_rows))
    return written
