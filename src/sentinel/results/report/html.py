"""One self-contained HTML page: inline style, figures as data URIs, no scripts.

Read in the morning, top down: the summary (the verdict, what changed since
the previous comparable session, what was not measured), each line a link
to its detail; then the detail by partition, environment and check; then
the full lists (requirements, change points, nodes, every variable).

The markup is in the Jinja2 templates beside this module (``templates/``),
every value escaped by the environment's autoescape; this module gathers
what each part shows, as text.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import jinja2

from sentinel.analysis.variables import declaration
from sentinel.results.report import tables
from sentinel.results.report.load import Case, Inputs
from sentinel.results.report.summary import Summary, case_id, check_id, slug, test_name, when
from sentinel.results.report.tables import Acceptance, Row, natural, nodes, num, value_text

if TYPE_CHECKING:  # changes reads the report's loader: imported for the type only
    from sentinel.results.changes import Change

#: Lines of a summary group shown on the first screen; the rest are one click away.
SHOWN = 4

#: A table's body: a row of cells, each text.
Rows = list[tuple[str, ...]]

#: The navigation's targets after the partitions: (id, text).
_NAV = (("since", "What changed"), ("acceptance", "Acceptance"), ("changes", "Change points"),
        ("retried", "Retried"), ("nodes", "Nodes"), ("matrix", "Transport matrix"),
        ("unmeasured", "Not measured"), ("inputs", "Inputs"))


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("sentinel.results.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["slug"] = slug
    env.globals["SHOWN"] = SHOWN
    return env


@dataclass(frozen=True)
class CaseRow:
    """A test case's row in its check's table: its parameters, result and headline values."""

    id: str
    params: str
    reason: str  # why it did not pass ('' when it did)
    result: str
    cells: list[tuple[str, str]]  # (text, CSS class) per headline variable
    bands: str = ""  # where its bands came from: the file, the sessions learnt from


@dataclass(frozen=True)
class CheckDetail:
    """One check's section on one partition and environment."""

    id: str
    check: str
    environ: str
    part: str
    failed: int
    headline: list[str]  # the headline variables, a column each
    rows: list[CaseRow]
    queue_models: Rows
    figures: list[tuple[str, str]]
    quiet: int  # the stored sessions, said to have no change point (0: nothing to say)
    variables: Rows  # every performance variable, one click away


@dataclass(frozen=True)
class Partition:
    """A partition's section: its table of contents and its checks' sections."""

    name: str
    toc: list[tuple[str, list[tuple[str, str]]]]  # environ -> [(section id, check)]
    checks: list[CheckDetail]


def _margin(r: Row) -> str:
    m = r.var.margin
    return "" if m is None else f"{100 * m:+.1f} %"


def _band(r: Row) -> str:
    lo, hi = r.var.band
    return tables.bounds(lo, hi, r.var.unit, r.var.value) if r.var.referenced else ""


def _variables(cases: list[Case]) -> Rows:
    """Every performance variable of one check's test cases."""
    return [(" ".join(x for x in (r.case.transport, r.case.mapping, r.case.variant, r.case.node)
                      if x) or r.case.name, r.var.name,
             value_text(r.var),
             num(r.var.reference, r.var.unit) if r.var.referenced else "", r.var.change,
             _band(r), _margin(r), r.verdict) for r in tables.rows(cases)]


def _requirements(acc: Acceptance) -> Rows:
    return [(r.case.where, test_name(r.case), r.var.name, value_text(r.var), r.var.change,
             _band(r), _margin(r), r.verdict) for r in acc.requirements]


def _retried(cases: list[Case]) -> Rows:
    return [(c.where, c.name, "; ".join(c.retried), c.result.upper())
            for c in cases if c.retried]


def _vetted(vetted: list[tables.NodeVerdict]) -> Rows:
    return [(v.where, v.node, str(v.passed), str(len(v.failed)), str(v.skipped),
             "; ".join(f"{f.test}: {f.reason}" for f in v.failed),
             v.verdict) for v in vetted]


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


def _queue_models(cases: list[Case]) -> Rows:
    """MatchingCheck's queue model per pattern with its evidence, and its matching times."""
    return [(c.where, c.transport, c.mapping, _evidence(c), _matching_times(c))
            for c in sorted(cases, key=lambda c: (c.where, c.label))
            if c.check == "MatchingCheck" and c.result == "pass"]


def _changes(found: list[Change]) -> Rows:
    return [(time.strftime("%Y-%m-%d %H:%M", time.gmtime(c.after.time)),
             c.after.session[:8] + (f" ({c.mode})" if c.mode else ""),
             c.where, c.test, c.variable, f"{num(c.old, c.unit)} -> {num(c.new, c.unit)}",
             f"{c.shift:+.1%}", f"{c.pvalue:.3f}",
             f"{c.verdict} ({c.block})" if c.block else c.verdict,
             "; ".join(c.provenance) or "nothing recorded differs")
            for c in found]


def _cell(c: Case, name: str) -> tuple[str, str]:
    """A headline value with unit and interval, or why it is unresolved; its CSS class."""
    var = c.variables.get(name)
    unresolved = c.extra.get("unresolved") if isinstance(c.extra.get("unresolved"), dict) else {}
    if name in unresolved:  # before any value the run report may still carry
        return f"unresolved: {str(unresolved[name]).split(',')[0]}", "unresolved"
    if var is not None and var.value is not None:
        cls = "" if not var.referenced else ("PASS" if var.result == "pass" else "FAIL")
        band = f" band {_band(Row(c, var))}" if var.referenced else ""
        return value_text(var) + band, cls
    return "", ""


def _headline(cases: list[Case]) -> list[str]:
    """The headline variables of a check's test cases, the unresolved ones too."""
    return sorted({n for c in cases for n, v in c.variables.items() if v.headline}
                  | {n for c in cases for n in (c.extra.get("unresolved") or {})
                     if c.variables.get(n) is None and declaration(c.check, n)
                     and declaration(c.check, n).is_headline(n)}, key=natural)


def _case_row(c: Case, names: list[str]) -> CaseRow:
    params = " ".join(x for x in (c.transport, c.mapping, c.variant, c.node) if x)
    result = c.result.upper() if c.result in ("pass", "fail") else c.result
    reason = c.fail_reason if c.result != "pass" else ""
    return CaseRow(case_id(c), params or c.name, reason, result, [_cell(c, n) for n in names],
                   bands_said(c))


def bands_said(c: Case) -> str:
    """Where a test case's bands came from: the sessions of its learnt baseline, the file."""
    origin = c.extra.get("reference_origin") or {}
    parts = []
    if "file" in origin.values():
        parts.append("bands from the reference file")
    sessions = [s.rpartition("@") for s in c.extra.get("baseline_sessions") or []]
    if sessions:
        first, last = float(sessions[0][2]), float(sessions[-1][2])
        parts.append(f"bands learnt from {len(sessions)} passed sessions, "
                     f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime(first))} to "
                     f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime(last))} UTC: "
                     + " ".join(u[:8] for u, _, _ in sessions))
    provisional = c.extra.get("provisional") or {}
    if provisional:
        parts.append("provisional: " + "; ".join(f"{n} ({why})"
                                                 for n, why in sorted(provisional.items())))
    parts += [f"{n}: {said}" for n, said in sorted((c.extra.get("level_changes") or {}).items())]
    return "; ".join(parts)


def _check(part: str, env: str, check: str, members: list[Case],
           figures: dict[tuple[str, str], list], stored: dict[tuple[str, str], int],
           changed: set[tuple[str, str]]) -> CheckDetail:
    """One check's section: its table of test cases, its figures, its variables."""
    where = f"{part}+{env}"
    names = _headline(members)
    ordered = sorted(members, key=lambda c: (natural(c.transport), c.mapping,
                                             natural(c.variant), c.node))
    sessions = stored.get((where, check), 0)
    return CheckDetail(
        check_id(where, check), check, env, part,
        sum(c.result in ("fail", "abort") for c in members), names,
        [_case_row(c, names) for c in ordered],
        _queue_models(members) if check == "MatchingCheck" else [],
        figures.get((where, check), []),
        sessions if sessions >= 2 and (where, check) not in changed else 0,
        _variables(members))


def _detail(cases: list[Case], figures: dict[tuple[str, str], list],
            stored: dict[tuple[str, str], int], changed: set[tuple[str, str]]
            ) -> list[Partition]:
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
        toc = [(env, [(check_id(f"{part}+{env}", check), check) for check in sorted(envs[env])])
               for env in sorted(envs)]
        out.append(Partition(part, toc, [
            _check(part, env, check, members, figures, stored, changed)
            for env in sorted(envs) for check, members in sorted(envs[env].items())]))
    return out


def _nav(cases: list[Case]) -> list[tuple[str, str]]:
    """The header's links: the summary, each partition, each of the full lists."""
    parts = sorted({f"{c.system}:{c.partition}" for c in cases}, key=natural)
    return [("summary", "Summary"), *(("p-" + slug(p), p) for p in parts), *_NAV]


def _newest(s: Summary) -> str:
    return (f"session {str(s.newest.get('uuid', ''))[:8]} started {when(s.newest)}"
            if s.newest else "no session")


def _ran(cases: list[Case]) -> str:
    """How many test cases ended in each result: ``5 fail, 80 pass``."""
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.result] = counts.get(c.result, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no test cases"


def page(title: str, generated: str, inputs: Inputs, acc: Acceptance,
         matrix: tuple[list[str], list[list[str]]], figures: dict[tuple[str, str], list],
         found: list[Change], summary: Summary) -> str:
    """The whole report as one HTML document: the summary first, the detail after it."""
    stored: dict[tuple[str, str], int] = {}
    for _, cases in inputs.history:
        for key in {(c.where, c.check) for c in cases}:
            stored[key] = stored.get(key, 0) + 1
    changed = {(c.where, c.test.split(" ")[0]) for c in found}
    vetted = nodes(inputs.cases)
    return _environment().get_template("page.html").render(
        title=title, generated=generated, nav=_nav(inputs.cases), acc=acc, summary=summary,
        met=sum(r.verdict == "PASS" for r in acc.requirements), newest=_newest(summary),
        ran=_ran(inputs.cases),
        skipped=sum(len(g.lines) for g in summary.unmeasured if g.title.startswith("skipped")),
        unresolved=sum(len(g.lines) for g in summary.unmeasured
                       if g.title.startswith("unres")),
        parts=_detail(inputs.cases, figures, stored, changed),
        requirements=_requirements(acc),
        unmeasured=[(a.requirement.check, a.requirement.key, a.requirement.variable,
                     f"{a.status}: {a.why}", "NOT MEASURED") for a in acc.unmeasured],
        failed=[(c.where, c.name, c.fail_reason, "FAIL") for c in acc.failed_cases],
        changes=_changes(found), retried=_retried(inputs.cases), vetted=_vetted(vetted),
        vetted_failed=sum(bool(v.failed) for v in vetted), matrix=matrix,
        acted=[(time.strftime("%Y-%m-%d %H:%M", time.gmtime(a.time)), a.where, a.node,
                a.action, a.reason, " ".join(s[:8] for s in a.sessions.split()))
               for a in reversed(inputs.node_actions)],
        sessions=[(s.get("uuid", ""), s.get("time_start", ""), s.get("cmdline", ""))
                  for s in inputs.sessions],
        inputs=inputs)
