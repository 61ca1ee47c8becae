"""The morning summary: what changed since the previous comparable session, and where.

Pure functions of the loaded inputs. The newest run report's session is
compared with the latest stored session before it that ran in the same mode
(``--session-extras mode=...``) and shares test cases with it; each line
names a test case, a node or a link, and the detail section it links to.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sentinel.errors import SentinelError
from sentinel.results.report.load import Case, Inputs, Variable
from sentinel.results.report.tables import (
    Acceptance,
    HostSlowdown,
    host_slowdowns,
    nodes,
    num,
    value_text,
)

if TYPE_CHECKING:  # changes reads the report's loader: imported for the type only
    from sentinel.results.changes import Change

FAILED = ("fail", "abort")


def slug(*parts: str) -> str:
    """An HTML id made of ``parts`` (letters, digits, ``-``), stable from run to run."""
    return "-".join(re.sub(r"[^A-Za-z0-9]+", "-", p).strip("-") for p in parts if p)


def case_id(c: Case) -> str:
    """The id of a test case's row in its check's detail."""
    return "c-" + slug(c.where, c.name.split(" %build")[0])


def check_id(where: str, check: str) -> str:
    """The id of a check's detail section on one partition and environment."""
    return "d-" + slug(where, check)


def test_name(c: Case) -> str:
    """The display name without the build fixture's parameters."""
    return c.name.split(" %build")[0]


@dataclass(frozen=True)
class Line:
    """One line of the summary: what it says, where its detail is, how it reads."""

    text: str
    target: str   # id of the element it links to
    verdict: str  # FAIL, PASS, INFO or INCOMPLETE


@dataclass
class Group:
    """Lines of one kind ("new failures"), the worst first."""

    title: str
    verdict: str
    lines: list[Line] = field(default_factory=list)


@dataclass(frozen=True)
class Summary:
    """What the summary section says."""

    newest: dict            # session_info of the newest run report ({} without one)
    previous: dict | None   # the comparable stored session, if any
    compared: str           # with what, or why nothing was compared
    changed: list[Group]
    unmeasured: list[Group]


def when(info: dict) -> str:
    """When a session started, in UTC."""
    t = info.get("time_start_unix")
    return (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t)) if isinstance(t, (int, float))
            else str(info.get("time_start", "at an unknown time")))


def newest_session(inputs: Inputs) -> dict:
    """The session_info of the newest run report read ({} when none was)."""
    return max(inputs.sessions, key=lambda s: s.get("time_start_unix") or 0, default={})


def _mode(info: dict) -> str:
    return str(info.get("mode") or (info.get("extras") or {}).get("mode") or "")


def previous_comparable(inputs: Inputs, newest: dict) -> tuple[dict, list[Case]] | None:
    """The latest stored session before ``newest``, of its mode, sharing a test case."""
    mine = {(c.where, test_name(c)) for c in inputs.cases}
    started = newest.get("time_start_unix") or float("inf")
    own = {s.get("uuid") for s in inputs.sessions}
    for info, cases in reversed(inputs.history):
        if (info.get("uuid") in own or (info.get("time_start_unix") or 0) >= started
                or _mode(info) != _mode(newest)):
            continue
        if mine & {(c.where, test_name(c)) for c in cases}:
            return info, cases
    return None


def _compared(inputs: Inputs, newest: dict, previous: dict | None) -> str:
    mode = _mode(newest)
    of_mode = f" of mode {mode}" if mode else " without a mode"
    if previous is not None:
        return f"session {str(previous.get('uuid', ''))[:8]}{of_mode}, started {when(previous)}"
    own = {s.get("uuid") for s in inputs.sessions}
    others = sum(info.get("uuid") not in own for info, _ in inputs.history)
    if not inputs.history:
        return ("nothing: no results database read (sentinel report --db, or the "
                "storage of ReFrame's results)")
    if not others:
        return "nothing: the results database holds no session before this one"
    return (f"nothing: none of the {others} other stored sessions ran{of_mode} before this "
            "one and shared a test case with it")


def _case_groups(now: list[Case], before: list[Case] | None,
                 folded: set[int]) -> list[Group]:
    """New failures, still failing, fixed, no longer run: per test case.

    A failure on a node slowed as a whole is said once, as the node's (``folded``).
    """
    then = {(c.where, test_name(c)): c for c in before or []}
    groups = [Group("test cases that fail (new since the previous session)", "FAIL"),
              Group("test cases that still fail", "FAIL"),
              Group("test cases fixed since the previous session", "PASS"),
              Group("test cases the previous session ran and this one did not", "INFO")]
    for c in sorted(now, key=lambda c: (c.where, c.name)):
        old = then.get((c.where, test_name(c)))
        if c.result in FAILED and _on(c, folded):
            continue
        if c.result in FAILED:
            reason = c.fail_reason.splitlines()[0] if c.fail_reason else c.result
            if before is not None and old is not None and old.result in FAILED:
                groups[1].lines.append(Line(f"{c.where} {test_name(c)}: {reason}",
                                            case_id(c), "FAIL"))
            else:
                how = "" if before is None else (" (passed then)" if old else " (not run then)")
                groups[0].lines.append(Line(f"{c.where} {test_name(c)}: {reason}{how}",
                                            case_id(c), "FAIL"))
        elif c.result == "pass" and old is not None and old.result in FAILED:
            groups[2].lines.append(Line(f"{c.where} {test_name(c)}", case_id(c), "PASS"))
    ran = {(c.where, test_name(c)) for c in now}
    for key, old in sorted(then.items()):
        # a fixture (a build, `~partition+environ`) goes with the tests that need it
        if key not in ran and old.result != "skip" and " ~" not in old.name:
            groups[3].lines.append(Line(f"{key[0]} {key[1]} ({old.result} then)",
                                        check_id(old.where, old.check), "INFO"))
    return groups


def _host(slowed: list[HostSlowdown]) -> list[Group]:
    """Nodes slowed as a whole: those with failures (folded here), then the others."""
    failed = Group("nodes slowed as a whole (their host probe, before the MPI)", "FAIL")
    quiet = Group("nodes whose host probe was outside its band, nothing judged failing "
                  "with it", "INFO")
    for s in slowed:
        group = failed if s.cases else quiet
        group.lines.append(Line(f"{s.where} {s.text}", case_id(s.shown_by), group.verdict))
    return [failed, quiet]


def _folded(slowed: list[HostSlowdown]) -> set[int]:
    """The failed test cases a slowed node explains: said once, in its line."""
    return {id(c) for s in slowed for c in s.cases}


def _on(c: Case, folded: set[int]) -> bool:
    return id(c) in folded


def _requirements(acc: Acceptance, folded: set[int]) -> Group:
    group = Group("requirements not met (values outside their reference band)", "FAIL")
    for r in acc.requirements:
        if r.verdict == "FAIL" and not _on(r.case, folded):
            group.lines.append(Line(f"{r.case.where} {test_name(r.case)} {r.var.name}: "
                                    f"{measured_twice(r.case, r.var)}, "
                                    f"{r.var.change} than its {_origin(r.var)}",
                                    case_id(r.case), "FAIL"))
    return group


def measured_twice(c: Case, var: Variable) -> str:
    """The value, after what the earlier attempts measured where they failed on it too."""
    before = [e[var.name] for e in c.earlier_values if var.name in e]
    if not before:
        return value_text(var)
    return ("; ".join(f"{value_text(v)}" for v in before) + f", then {value_text(var)} "
            f"measured again")


def _origin(var: Variable) -> str:
    return {"learnt": "learnt baseline", "file": "reference (file)"}.get(var.origin,
                                                                         "reference")


def _level_changes(cases: list[Case]) -> Group:
    """Judged variables whose level changed and that nobody accepted: the band stays."""
    group = Group("levels that changed and that nobody accepted (the band stays at the old "
                  "level: sentinel accept moves it)", "INFO")
    for c in sorted(cases, key=lambda c: (c.where, c.name)):
        for name, said in sorted((c.extra.get("level_changes") or {}).items()):
            group.lines.append(Line(f"{c.where} {test_name(c)} {name}: {said}", case_id(c),
                                    "INFO"))
    return group


def _provisional(cases: list[Case]) -> list[Group]:
    """Judged variables without a band yet (burn-in), one group per reason."""
    by: dict[str, list[Line]] = defaultdict(list)
    for c in sorted(cases, key=lambda c: (c.where, c.name)):
        for name, why in sorted((c.extra.get("provisional") or {}).items()):
            head = str(why).split(":")[0]
            by[head].append(Line(f"{c.where} {test_name(c)} {name}: {why}", case_id(c),
                                 "INFO"))
    return [Group(f"{head}: judged, not failed", "INFO", lines)
            for head, lines in sorted(by.items())]


def _change_points(named: list[Change], cases: list[Case]) -> Group:
    group = Group("change points this session named (E-Divisive means over the stored "
                  "sessions)", "FAIL")
    here = {(c.where, c.name): c for c in cases}
    for ch in named:
        case = here.get((ch.where, ch.test))
        target = case_id(case) if case else "changes"
        judged = _judged(case, ch.variable)
        verdict = "FAIL" if ch.verdict == "regression" and judged else "INFO"
        group.lines.append(Line(f"{ch.where} {ch.test.split(' %build')[0]} {ch.variable}: "
                                f"{num(ch.old, ch.unit)} -> {num(ch.new, ch.unit)} "
                                f"({ch.shift:+.0%}, p = {ch.pvalue:.3f}) "
                                f"{ch.verdict} from session {ch.after.session[:8]}"
                                + ("" if judged else " (recorded, not judged)"),
                                target, verdict))
    return group


def _judged(case: Case | None, name: str) -> bool:
    """Whether the test case judged ``name`` (its check's headline ones for an older suite)."""
    var = case.variables.get(name) if case else None
    if var is not None and var.judged is not None:
        return var.judged
    return var.headline if var is not None else True


def _fabric(cases: list[Case], field: str = "outliers") -> Group:
    """The fabric sweeps' named nodes and links, or (``cleared``) the links cleared alone."""
    group = (Group("nodes and links the fabric sweep named", "FAIL") if field == "outliers"
             else Group("links slow only beside their step's other pairs (within the factor "
                        "measured alone: not named)", "INFO"))
    for c in sorted(cases, key=lambda c: (c.where, c.name)):
        lines = str(c.extra.get(field, "")) if c.check == "FabricCheck" else ""
        for line in filter(None, lines.splitlines()):
            group.lines.append(Line(f"{c.where}: {line}", case_id(c), group.verdict))
    return group


def _vetting(cases: list[Case]) -> Group:
    group = Group("nodes that failed vetting", "FAIL")
    for v in nodes(cases):
        for f in v.failed:
            group.lines.append(Line(f"{v.where} {v.node}: {f.test}: {f.reason}",
                                    case_id(f.case), "FAIL"))
    return group


def _skipped(cases: list[Case]) -> list[Group]:
    """Skipped test cases, one group per reason."""
    by: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        if c.result == "skip":
            by[c.fail_reason.strip() or "no reason recorded in the run report"].append(c)
    return [Group(f"skipped: {reason}", "INFO",
                  [Line(f"{c.where} {test_name(c)}", case_id(c), "INFO")
                   for c in sorted(members, key=lambda c: (c.where, c.name))])
            for reason, members in sorted(by.items(), key=lambda kv: -len(kv[1]))]


def _not_measured(acc: Acceptance) -> Group:
    """The acceptance's requirements that no test case measured, each with why."""
    return Group("requirements of the acceptance not measured (INCOMPLETE until they are)",
                 "INCOMPLETE", [Line(a.text, "acceptance", "INCOMPLETE")
                                for a in acc.unmeasured])


def _unresolved(cases: list[Case]) -> list[Group]:
    """Unresolved values, one group per variable name."""
    by: dict[str, list[Line]] = defaultdict(list)
    for c in sorted(cases, key=lambda c: (c.where, c.name)):
        unresolved = c.extra.get("unresolved") if c.result != "skip" else None
        for name, why in sorted(unresolved.items() if isinstance(unresolved, dict) else []):
            by[f"{c.check} {name}"].append(Line(f"{c.where} {test_name(c)}: {why}",
                                                case_id(c), "INFO"))
    return [Group(f"unresolved: {key}", "INFO", lines) for key, lines in sorted(by.items())]


#: How the summary reads each upgrade verdict.
_UPGRADE_READS = {"worse": "FAIL", "unresolved": "INCOMPLETE", "better": "PASS",
                  "no worse": "PASS"}


def _upgrades(inputs: Inputs) -> list[Group]:
    """Per second version the newest session ran beside its family's default: its verdict."""
    from sentinel.results import upgrade  # it reads this package's loader

    here = {(c.where, c.name): c for c in inputs.cases}
    groups = []
    for partition, old, new in upgrade.candidates([c for c in inputs.cases
                                                   if c.result != "skip"]):
        title = (f"{'standard ABI' if new.endswith('-abi') else 'upgrade'} {old} -> {new} "
                 f"on {partition}")
        try:
            found = upgrade.compare(inputs.history, old, new, partition)
        except SentinelError as err:
            groups.append(Group(title, "INCOMPLETE", [Line(str(err), "summary", "INCOMPLETE")]))
            continue
        group = Group(f"{title} ({len(found.sessions)} stored sessions ran both; goodness "
                      "new/old, above 1 better, median [interval])", "PASS")
        for pair in found.pairs:
            word = pair.verdict()
            case = here.get((f"{partition}+{old}", pair.test))
            group.lines.append(Line(f"{pair.check} {pair.transport} {pair.mapping}: "
                                    f"{pair.line(found.tolerance)}",
                                    case_id(case) if case else "summary", _UPGRADE_READS[word]))
        reads = {line.verdict for line in group.lines}
        group.verdict = next((v for v in ("FAIL", "INCOMPLETE") if v in reads), "PASS")
        groups.append(group)
    return groups


def summarise(inputs: Inputs, acc: Acceptance, found: list[Change]) -> Summary:
    """The summary of the newest run report, against the previous comparable session."""
    from sentinel.results import changes  # the module reads this package's loader

    newest = newest_session(inputs)
    previous = previous_comparable(inputs, newest) if newest else None
    stored = [s for s in inputs.history if s[0].get("uuid") == newest.get("uuid")]
    named = (changes.named_by(str(newest.get("uuid")), inputs.history, found)
             if stored else [])
    slowed = host_slowdowns(acc, inputs.cases)
    folded = _folded(slowed)
    new, still, fixed, gone = _case_groups(inputs.cases, previous[1] if previous else None,
                                           folded)
    host, quiet = _host(slowed)
    changed = [*_upgrades(inputs), host, new, _requirements(acc, folded),
               _change_points(named, inputs.cases),
               _fabric(inputs.cases), _vetting(inputs.cases), still, fixed, gone,
               _level_changes(inputs.cases), quiet, _fabric(inputs.cases, "cleared")]
    return Summary(newest, previous[0] if previous else None,
                   _compared(inputs, newest, previous[0] if previous else None),
                   [g for g in changed if g.lines],
                   [g for g in (_not_measured(acc),) if g.lines]
                   + [*_skipped(inputs.cases), *_unresolved(inputs.cases),
                      *_provisional(inputs.cases)])
