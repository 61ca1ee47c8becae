"""One self-contained HTML page: inline style, figures as data URIs, no scripts.

Read in the morning, top down: the summary (the verdict, what changed since
the previous comparable session, what was not measured), each line a link
to its detail; then the detail by partition, environment and check; then
the full lists (requirements, change points, nodes, every variable).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from html import escape
from typing import TYPE_CHECKING

from sentinel.analysis.variables import declaration
from sentinel.results.report import tables
from sentinel.results.report.load import Case, Inputs
from sentinel.results.report.summary import (
    Group,
    Summary,
    case_id,
    check_id,
    slug,
    test_name,
    when,
)
from sentinel.results.report.tables import (
    Acceptance,
    Row,
    natural,
    nodes,
    num,
    value_text,
)

if TYPE_CHECKING:  # changes reads the report's loader: imported for the type only
    from sentinel.results.changes import Change

_STYLE = """
body { font-family: sans-serif; margin: 0 1.5em 1.5em; color: #222; }
header { position: sticky; top: 0; background: #fff; border-bottom: 1px solid #ccc;
         padding: 0.3em 0; z-index: 1; }
h1 { margin: 0.2em 0; font-size: 22px; } .meta { margin: 0; font-size: 12px; color: #555; }
nav { font-size: 13px; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.2em; }
section { scroll-margin-top: 6em; } tr { scroll-margin-top: 6em; } h3 { scroll-margin-top: 6em; }
#summary { border-bottom: 4px solid #1f4e9a; padding-bottom: 0.3em; }
#summary h3 { margin: 0.5em 0 0.2em; font-size: 15px; } #summary p { margin: 0.3em 0; }
ul.groups { margin: 0.2em 0; padding-left: 1.2em; font-size: 13px; }
ul.groups ul { margin: 0; padding-left: 1.4em; } ul.compact li { display: inline; }
ul.compact li + li:before { content: " · "; }
table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #eee; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.PASS { color: #060; font-weight: bold; } .FAIL { color: #b00; font-weight: bold; }
.INFO { color: #444; font-weight: bold; } .unresolved { color: #875; font-style: italic; }
li.FAIL a, li.PASS a { font-weight: normal; } .reason { color: #b00; font-size: 11px; }
.verdict { font-size: 22px; padding: 0.1em 0.5em; border: 3px solid; display: inline-block; }
.verdict.PASS { border-color: #060; } .verdict.FAIL { border-color: #b00; }
section.check { border-left: 3px solid #ddd; padding-left: 0.8em; margin: 1em 0; }
.toc { font-size: 13px; } .wide { overflow-x: auto; max-width: 100%; }
details > summary { cursor: pointer; font-size: 13px; }
figure { margin: 0.8em 0; } figure img { max-width: 100%; }
figcaption { font-size: 12px; color: #555; }
.problems li { color: #b00; }
@media print { header { position: static; } figure, table { page-break-inside: avoid; }
               body { margin: 0; } }
"""


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
    return tables.bounds(lo, hi, r.var.unit, r.var.value) if r.var.referenced else ""


def _variables(cases: list[Case]) -> str:
    """Every performance variable of one check's test cases, one click away (closed)."""
    rows = tables.rows(cases)
    if not rows:
        return ""
    body = [(" ".join(x for x in (r.case.transport, r.case.mapping, r.case.variant, r.case.node)
                      if x) or r.case.name, r.var.name,
             value_text(r.var),
             num(r.var.reference, r.var.unit) if r.var.referenced else "", r.var.change,
             _band(r), _margin(r), r.verdict) for r in rows]
    table = _table(("test case", "variable", "measured [95 % interval]", "reference",
                    "vs reference", "band", "margin", "verdict"), body)
    return (f"<details><summary>every performance variable of these test cases "
            f"({len(rows)})</summary>{table}</details>")


def _acceptance(acc: Acceptance) -> str:
    parts = [f'<p><span class="verdict {acc.verdict}">{acc.verdict}</span></p>',
             f"<p>{len(acc.requirements)} requirements (referenced performance variables), "
             f"{sum(r.verdict == 'PASS' for r in acc.requirements)} met; "
             f"{len(acc.failed_cases)} test cases failed.</p>"]
    if acc.requirements:
        body = [(r.case.where, test_name(r.case), r.var.name,
                 value_text(r.var),
                 r.var.change, _band(r), _margin(r), r.verdict) for r in acc.requirements]
        parts.append(_table(("where", "test", "requirement", "measured [95 % interval]",
                             "vs reference",
                             "band", "margin", "verdict"), body))
    if acc.failed_cases:
        parts.append("<h3>Failed test cases</h3>")
        parts.append(_table(("where", "test", "reason", "verdict"),
                            [(c.where, c.name, c.fail_reason, "FAIL")
                             for c in acc.failed_cases]))
    return "".join(parts)


def _retried(cases: list[Case]) -> str:
    retried = [c for c in cases if c.retried]
    if not retried:
        return "<p>No test case was retried: each result is its first attempt.</p>"
    body = [(c.where, c.name, "; ".join(c.retried), c.result.upper()) for c in retried]
    return (f"<p>{len(retried)} test case(s) ran again after a failure (--max-retries): "
            "the earlier attempts are findings too (a crash that comes and goes is not "
            "a pass).</p>"
            + _table(("where", "test", "earlier attempts", "last attempt"), body))


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
        return f"<p>{escape(empty)}</p>" if empty else ""
    return "".join(f'<figure><img alt="{escape(t)}" src="{uri}">'
                   f"<figcaption>{escape(t)}</figcaption></figure>" for t, uri in figs)


def _matching_times(c: Case) -> str:
    """Each matching time, resolved (with its interval) or unresolved (with its bound)."""
    unresolved = c.extra.get("unresolved") if isinstance(c.extra.get("unresolved"), dict) else {}
    parts = [f"{n} = {value_text(v)}"
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


def _changes(found: list[Change], sessions: int) -> str:
    if not found:
        return (f"<p>No change point over the {sessions} stored sessions (E-Divisive means, "
                "and blocks that left their level and came back; headline variables).</p>")
    body = [(time.strftime("%Y-%m-%d %H:%M", time.gmtime(c.after.time)),
             c.after.session[:8] + (f" ({c.mode})" if c.mode else ""),
             c.where, c.test, c.variable, f"{num(c.old, c.unit)} -> {num(c.new, c.unit)}",
             f"{c.shift:+.1%}", f"{c.pvalue:.3f}",
             f"{c.verdict} ({c.block})" if c.block else c.verdict,
             "; ".join(c.provenance) or "nothing recorded differs")
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


#: Lines of a summary group shown on the first screen; the rest are one click away.
SHOWN = 4


def _link(target: str, text: str) -> str:
    return f'<a href="#{escape(target)}">{escape(text)}</a>'


def _group(g: Group, more: str) -> str:
    """A summary group: its count and title, its first lines, a link to the rest."""
    items = "".join(f'<li class="{line.verdict}">{_link(line.target, line.text)}</li>'
                    for line in g.lines[:SHOWN])
    rest = (f'<li class="more">{_link(more, f"and {len(g.lines) - SHOWN} more")}</li>'
            if len(g.lines) > SHOWN else "")
    return (f'<li><span class="{g.verdict}">{len(g.lines)}</span> {escape(g.title)}'
            f"<ul>{items}{rest}</ul></li>")


def _summary(s: Summary, acc: Acceptance, counts: str) -> str:
    newest = (f"session {str(s.newest.get('uuid', ''))[:8]} started "
              f"{when(s.newest)}" if s.newest else "no session")
    parts = [f'<p><span class="verdict {acc.verdict.replace(" ", "-")}">'
             f"{escape(acc.verdict)}</span> {_link('acceptance', 'acceptance')}: "
             f"{sum(r.verdict == 'PASS' for r in acc.requirements)} of "
             f"{len(acc.requirements)} requirements met, {len(acc.failed_cases)} test cases "
             f"failed; {escape(newest)}: {escape(counts)}.</p>",
             f"<h3>What changed since the previous comparable session</h3>"
             f"<p>Compared with {escape(s.compared)}.</p>"]
    if s.changed:
        parts.append('<ul class="groups">' + "".join(
            _group(g, "s-" + slug(g.title)) for g in s.changed) + "</ul>")
    else:
        parts.append('<p class="PASS">Nothing: no new failure, no requirement out of its '
                     "band, no change point named, no node or link named.</p>")
    parts.append("<h3>Not measured, and why</h3>")
    if s.unmeasured:
        skipped = sum(len(g.lines) for g in s.unmeasured if g.title.startswith("skipped"))
        unresolved = sum(len(g.lines) for g in s.unmeasured if g.title.startswith("unres"))
        more = f"and {len(s.unmeasured) - SHOWN} more groups"
        parts.append(f"<p>{skipped} test cases skipped, {unresolved} values unresolved "
                     f"({_link('unmeasured', 'all of them, grouped')}):</p>")
        parts.append('<ul class="groups compact">' + "".join(
            f'<li><span class="INFO">{len(g.lines)}</span> '
            f"{_link('u-' + slug(g.title), g.title)}</li>" for g in s.unmeasured[:SHOWN])
            + (f'<li class="more">{_link("unmeasured", more)}</li>'
               if len(s.unmeasured) > SHOWN else "") + "</ul>")
    else:
        parts.append("<p>Everything selected was run, and every value resolved.</p>")
    return "".join(parts)


def _listed(groups: list[Group], prefix: str) -> str:
    """Every line of the summary's groups, each under a heading the summary links to."""
    return "".join(
        f'<h3 id="{prefix}{slug(g.title)}">{escape(g.title)} ({len(g.lines)})</h3><ul>'
        + "".join(f'<li class="{line.verdict}">{_link(line.target, line.text)}</li>'
                  for line in g.lines) + "</ul>"
        for g in groups)


def _cell(c: Case, name: str) -> tuple[str, str]:
    """A headline value with unit and interval, or why it is unresolved; its CSS class."""
    var = c.variables.get(name)
    unresolved = c.extra.get("unresolved") if isinstance(c.extra.get("unresolved"), dict) else {}
    if name in unresolved:  # before any value the run report may still carry
        return escape(f"unresolved: {str(unresolved[name]).split(',')[0]}"), "unresolved"
    if var is not None and var.value is not None:
        cls = "" if not var.referenced else ("PASS" if var.result == "pass" else "FAIL")
        band = f" band {_band(Row(c, var))}" if var.referenced else ""
        return escape(value_text(var) + band), cls
    return "", ""


def _check_table(cases: list[Case]) -> str:
    """A row per test case: its parameters, result and headline values."""
    names = sorted({n for c in cases for n, v in c.variables.items() if v.headline}
                   | {n for c in cases for n in (c.extra.get("unresolved") or {})
                      if c.variables.get(n) is None and declaration(c.check, n)
                      and declaration(c.check, n).is_headline(n)}, key=natural)
    head = "".join(f"<th>{escape(h)}</th>" for h in ("test case", "result", *names))
    body = []
    for c in sorted(cases, key=lambda c: (natural(c.transport), c.mapping, natural(c.variant),
                                          c.node)):
        params = " ".join(x for x in (c.transport, c.mapping, c.variant, c.node) if x)
        result = c.result.upper() if c.result in ("pass", "fail") else c.result
        reason = (f'<div class="reason">{escape(c.fail_reason)}</div>'
                  if c.result != "pass" and c.fail_reason else "")
        cells = [_cell(c, n) for n in names]
        body.append(f'<tr id="{case_id(c)}"><td>{escape(params or c.name)}{reason}</td>'
                    f'<td class="{result}">{escape(result)}</td>'
                    + "".join(f'<td class="num {cls}">{text}</td>' for text, cls in cells)
                    + "</tr>")
    return f'<div class="wide"><table><tr>{head}</tr>{"".join(body)}</table></div>'


def _quiet(sessions: int, changed: bool) -> str:
    """What a section without trends says of its history."""
    if changed or sessions < 2:
        return ""
    return (f"<p>Over the {sessions} stored sessions that ran these test cases, no change "
            "point in their headline variables (trends are drawn where there is one).</p>")


def _detail(cases: list[Case], figures: dict[tuple[str, str], list],
            stored: dict[tuple[str, str], int], changed: set[tuple[str, str]]) -> str:
    """Per partition, environment and check: the table of test cases and the figures.

    ``stored``: per (where, check), the stored sessions with its test cases;
    ``changed``: the (where, check) with a change point.
    """
    tree: dict[str, dict[str, dict[str, list[Case]]]] = {}
    for c in cases:
        part = f"{c.system}:{c.partition}"
        tree.setdefault(part, {}).setdefault(c.environ, {}).setdefault(c.check, []).append(c)
    out = []
    for part in sorted(tree, key=natural):
        envs = tree[part]
        toc = "; ".join(f"{escape(env)}: " + ", ".join(
            _link(check_id(f"{part}+{env}", check), check) for check in sorted(envs[env]))
            for env in sorted(envs))
        out.append(f'<section id="{"p-" + slug(part)}"><h2>{escape(part)}</h2>'
                   f'<p class="toc">{toc}</p>')
        for env in sorted(envs):
            for check, members in sorted(envs[env].items()):
                where = f"{part}+{env}"
                failed = sum(c.result in ("fail", "abort") for c in members)
                out.append(f'<section id="{check_id(where, check)}" class="check">'
                           f"<h3>{escape(check)}, {escape(env)} on {escape(part)}: "
                           f"{len(members)} test cases, {failed} failed</h3>"
                           + _check_table(members)
                           + (_queue_models(members) if check == "MatchingCheck" else "")
                           + _figures(figures.get((where, check), []), "")
                           + _quiet(stored.get((where, check), 0), (where, check) in changed)
                           + _variables(members) + "</section>")
        out.append("</section>")
    return "".join(out) or "<p>No test case in the run reports read.</p>"


def page(title: str, generated: str, inputs: Inputs, acc: Acceptance,
         matrix: tuple[list[str], list[list[str]]], figures: dict[tuple[str, str], list],
         found: list[Change], summary: Summary) -> str:
    """The whole report as one HTML document: the summary first, the detail after it."""
    stored: dict[tuple[str, str], int] = {}
    for _, cases in inputs.history:
        for key in {(c.where, c.check) for c in cases}:
            stored[key] = stored.get(key, 0) + 1
    changed = {(c.where, c.test.split(" ")[0]) for c in found}
    counts: dict[str, int] = {}
    for c in inputs.cases:
        counts[c.result] = counts.get(c.result, 0) + 1
    ran = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no test cases"
    parts = sorted({f"{c.system}:{c.partition}" for c in inputs.cases}, key=natural)
    nav = " · ".join([_link("summary", "Summary"),
                      *(_link("p-" + slug(p), p) for p in parts),
                      *(_link(sid, head) for sid, head in (
                          ("since", "What changed"), ("acceptance", "Acceptance"),
                          ("changes", "Change points"), ("retried", "Retried"),
                          ("nodes", "Nodes"), ("matrix", "Transport matrix"),
                          ("unmeasured", "Not measured"), ("inputs", "Inputs")))])
    sections = [
        ("acceptance", "Acceptance: every requirement, every failed test case",
         _acceptance(acc)),
        ("changes", "Change points in the history", _changes(found, len(inputs.history))),
        ("retried", "Retried: test cases whose first attempt failed", _retried(inputs.cases)),
        ("nodes", "Every node vetted (node-local checks, one job per node)",
         _nodes(inputs.cases)),
        ("matrix", "Transport matrix (pt2pt: 8 B latency, peak bandwidth)",
         _table(*matrix) if matrix[1] else "<p>No pt2pt results.</p>"),
        ("since", f"What changed since the previous comparable session: {summary.compared}",
         _listed(summary.changed, "s-") or "<p>Nothing.</p>"),
        ("unmeasured", "Not measured: skipped test cases, unresolved values",
         _listed(summary.unmeasured, "u-")
         or "<p>Nothing: no test case skipped, no value unresolved.</p>"),
        ("inputs", "Inputs", _inputs(inputs)),
    ]
    body = "".join(f'<section id="{sid}"><h2>{escape(head)}</h2>{html}</section>'
                   for sid, head, html in sections)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
            f'<header><h1>{escape(title)}</h1><p class="meta">Generated {escape(generated)}.'
            f'</p><nav>{nav}</nav></header>'
            f'<section id="summary"><h2>Summary</h2>{_summary(summary, acc, ran)}</section>'
            f'<div id="detail">{_detail(inputs.cases, figures, stored, changed)}</div>'
            f"{body}</body></html>")
