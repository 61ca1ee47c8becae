"""One self-contained HTML page: inline style, figures as data URIs, no scripts."""

from __future__ import annotations

import time
from collections.abc import Iterable
from html import escape
from typing import TYPE_CHECKING

from sentinel.results.report.load import Case, Inputs
from sentinel.results.report.tables import Acceptance, Row, nodes

if TYPE_CHECKING:  # changes reads the report's loader: imported for the type only
    from sentinel.results.changes import Change

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
th { background: #eee; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.PASS { color: #060; font-weight: bold; } .FAIL { color: #b00; font-weight: bold; }
.verdict { font-size: 28px; padding: 0.3em 0.6em; border: 3px solid; display: inline-block; }
.verdict.PASS { border-color: #060; } .verdict.FAIL { border-color: #b00; }
figure { margin: 0.8em 0; } figcaption { font-size: 12px; color: #555; }
.problems li { color: #b00; }
@media print { figure, table { page-break-inside: avoid; } body { margin: 0; } }
"""


def _num(x: float | None, unit: str = "") -> str:
    if x is None:
        return ""
    text = f"{x:.4g}" if abs(x) < 1e5 else f"{x:.0f}"
    return f"{text} {unit}".strip()


def measured(value: float | None, unit: str, interval: tuple[float, float] | None) -> str:
    """A value with its unit and, where it has one, its 95 % interval."""
    if interval is None:
        return _num(value, unit)
    return f"{_num(value, unit)} [{_num(interval[0])}, {_num(interval[1])}]"


def _table(header: Iterable[str], body: Iterable[Iterable[str]], raw: bool = False) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    lines = []
    for row in body:
        cells = []
        for cell in row:
            text = cell if raw else escape(str(cell))
            cls = f' class="{cell}"' if cell in ("PASS", "FAIL") else ""
            cells.append(f"<td{cls}>{text}</td>")
        lines.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(lines)}</table>"


def _margin(r: Row) -> str:
    m = r.var.margin
    return "" if m is None else f"{100 * m:+.1f} %"


def _band(r: Row) -> str:
    lo, hi = r.var.band
    return f"[{_num(lo)}, {_num(hi)}]" if r.var.referenced else ""


def _variables_table(rows: list[Row]) -> str:
    body = [(r.case.where, r.case.name, r.var.name,
             measured(r.var.value, r.var.unit, r.var.interval),
             _num(r.var.reference) if r.var.referenced else "", r.var.change, _band(r),
             _margin(r), r.verdict) for r in rows]
    return _table(("where", "test", "variable", "measured [95 % interval]", "reference",
                   "vs reference", "band", "margin", "verdict"), body)


def _acceptance(acc: Acceptance) -> str:
    parts = [f'<p><span class="verdict {acc.verdict}">{acc.verdict}</span></p>',
             f"<p>{len(acc.requirements)} requirements (referenced performance variables), "
             f"{sum(r.verdict == 'PASS' for r in acc.requirements)} met; "
             f"{len(acc.failed_cases)} test cases failed.</p>"]
    if acc.requirements:
        body = [(r.case.where, r.case.name, r.var.name, _num(r.var.value, r.var.unit),
                 r.var.change, _band(r), _margin(r), r.verdict) for r in acc.requirements]
        parts.append(_table(("where", "test", "requirement", "measured", "vs reference",
                             "band", "margin", "verdict"), body))
    if acc.failed_cases:
        parts.append("<h3>Failed test cases</h3>")
        parts.append(_table(("where", "test", "reason", "verdict"),
                            [(c.where, c.name, c.fail_reason, "FAIL")
                             for c in acc.failed_cases]))
    return "".join(parts)


def _nodes(cases: list[Case]) -> str:
    vetted = nodes(cases)
    if not vetted:
        return ("<p>No test case was pinned to a node: run the vet mode (--mode vet, "
                "ReFrame's --distribute) to check every node.</p>")
    bad = sum(bool(v.failed) for v in vetted)
    body = [(v.where, v.node, str(v.passed), str(len(v.failed)), str(v.skipped),
             "; ".join(f"{c.name.split(' %.part=')[0]}: {c.fail_reason}" for c in v.failed),
             v.verdict) for v in vetted]
    return (f"<p>{len(vetted)} nodes vetted, {bad} failed.</p>"
            + _table(("partition", "node", "passed", "failed", "skipped", "what failed",
                      "verdict"), body))


def _figures(figs: list[tuple[str, str]], empty: str) -> str:
    if not figs:
        return f"<p>{escape(empty)}</p>"
    return "".join(f'<figure><img alt="{escape(t)}" src="{uri}">'
                   f"<figcaption>{escape(t)}</figcaption></figure>" for t, uri in figs)


def _matching_times(c: Case) -> str:
    """Each matching time, resolved (with its interval) or unresolved (with its bound)."""
    unresolved = c.extra.get("unresolved") if isinstance(c.extra.get("unresolved"), dict) else {}
    parts = [f"{n} = {measured(v.value, v.unit, v.interval)}"
             for n, v in sorted(c.variables.items()) if n.startswith("match_time")]
    parts += [f"{n} unresolved: {str(why).split(':')[0]}"
              for n, why in sorted(unresolved.items()) if n.startswith("match_time")]
    return "; ".join(parts)


def _evidence(c: Case) -> str:
    evidence = c.extra.get("queue_evidence")
    if isinstance(evidence, dict) and evidence:
        return "; ".join(f"{queue}: {text}" for queue, text in sorted(evidence.items()))
    return str(c.extra.get("queue_model", ""))


def _queue_models(cases: list[Case]) -> str:
    body = [(c.where, c.transport, c.mapping, _evidence(c), _matching_times(c))
            for c in sorted(cases, key=lambda c: (c.where, c.label))
            if c.check == "MatchingCheck" and c.result == "pass"]
    if not body:
        return ""
    return _table(("where", "transport", "mapping", "queue model per pattern, and its evidence",
                   "matching times [95 % interval] (ns)"), body)


def unresolved_rows(cases: list[Case]) -> list[tuple[str, str, str, str]]:
    """(where, test, variable, why) of every value a test could not resolve."""
    return [(c.where, c.name, name, str(why))
            for c in sorted(cases, key=lambda c: (c.where, c.label))
            if isinstance(c.extra.get("unresolved"), dict)
            for name, why in sorted(c.extra["unresolved"].items())]


def _unresolved(cases: list[Case]) -> str:
    body = unresolved_rows(cases)
    if not body:
        return ""
    return ("<h3>Unresolved: not a measurement, so not a value</h3>"
            + _table(("where", "test", "variable", "why"), body))


def _changes(found: list[Change], sessions: int) -> str:
    if not found:
        return (f"<p>No change point over the {sessions} stored sessions (E-Divisive means, "
                "headline variables).</p>")
    body = [(time.strftime("%Y-%m-%d %H:%M", time.gmtime(c.after.time)),
             c.after.session[:8] + (f" ({c.mode})" if c.mode else ""),
             c.where, c.test, c.variable, f"{_num(c.old)} -> {_num(c.new, c.unit)}",
             f"{c.shift:+.1%}", f"{c.pvalue:.3f}", c.verdict, "; ".join(c.provenance) or
             "nothing recorded differs")
            for c in found]
    return _table(("first session", "session", "where", "test", "variable", "median before "
                   "-> after", "shift", "p", "verdict", "what changed (provenance)"), body)


def _inputs(inputs: Inputs) -> str:
    sessions = [(s.get("uuid", ""), s.get("time_start", ""), s.get("cmdline", ""))
                for s in inputs.sessions]
    parts = [f"<p>Run reports: {escape(', '.join(inputs.files)) or 'none'}; "
             f"{len(inputs.history)} sessions in the results database.</p>"]
    if sessions:
        parts.append(_table(("session", "started", "command line"), sessions))
    if inputs.problems:
        parts.append('<h3>Could not be used</h3><ul class="problems">'
                     + "".join(f"<li>{escape(p)}</li>" for p in inputs.problems) + "</ul>")
    return "".join(parts)


def page(title: str, generated: str, inputs: Inputs, rows: list[Row], acc: Acceptance,
         matrix: tuple[list[str], list[list[str]]], figures: dict[str, list],
         found: list[Change]) -> str:
    """The whole report as one HTML document."""
    counts = {}
    for c in inputs.cases:
        counts[c.result] = counts.get(c.result, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no test cases"
    sections = [
        ("acceptance", "Acceptance", _acceptance(acc)),
        ("nodes", "Every node vetted (node-local checks, one job per node)",
         _nodes(inputs.cases)),
        ("matrix", "Transport matrix (pt2pt: 8 B latency, peak bandwidth)",
         _table(*matrix) if matrix[1] else "<p>No pt2pt results.</p>"),
        ("curves", "Latency and bandwidth", _figures(
            figures["curves"], "No latency or bandwidth sweeps.")),
        ("matching", "Message matching",
         _queue_models(inputs.cases) + _figures(figures["matching"], "No matching results.")),
        ("jacobi", "Hybrid Jacobi: measured against the model",
         _figures(figures["jacobi"], "No Jacobi results.")),
        ("scaling", "From a pair of ranks to the partition: time against processes",
         _figures(figures["scaling"], "No process-count series.")),
        ("fabric", "Fabric health: node pairs, load, traffic patterns",
         _figures(figures["fabric"], "No fabric results.")),
        ("changes", "Change points in the history", _changes(found, len(inputs.history))),
        ("trends", "Trends over the stored sessions (dashed: change points)",
         _figures(figures["trends"], "Fewer than two stored sessions with these values.")),
        ("variables", "Every performance variable",
         _variables_table(rows) + _unresolved(inputs.cases)),
        ("inputs", "Inputs", _inputs(inputs)),
    ]
    body = "".join(f'<section id="{sid}"><h2>{escape(head)}</h2>{html}</section>'
                   for sid, head, html in sections)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{escape(title)}</h1><p>Generated {escape(generated)}; test cases: "
            f"{escape(summary)}.</p>{body}</body></html>")
