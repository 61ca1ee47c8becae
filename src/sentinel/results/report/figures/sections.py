"""Every figure of a report's detail sections, each check drawn by its declared family.

A check's declaration names its figure family (``CheckSpec.figures``, a
plain name: the analysis layer knows nothing of drawing); :data:`FAMILIES`
maps each name to the family that draws it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from sentinel.analysis.variables import all_specs
from sentinel.errors import SentinelError
from sentinel.results.report.figures import curves, fabric, jacobi, matching, scaling, trends
from sentinel.results.report.figures.style import Figures
from sentinel.results.report.forked import forked_map
from sentinel.results.report.load import Case

#: A figure family: the figures of one section's test cases (one check's).
Family = Callable[[list[Case]], Figures]

#: Each figure family under the name a declaration gives it.
FAMILIES: dict[str, Family] = {
    "curves": curves.draw,
    "fabric": fabric.draw,
    "jacobi": jacobi.draw,
    "matching": matching.draw,
    "scaling": scaling.draw,
}


def family(check: str) -> Family | None:
    """The figure family of the check class named ``check``; None if it declares none.

    A check no declaration knows (a build, a fetch) has none; a declared
    family the report does not draw is an error.
    """
    spec = all_specs().get(check)
    if spec is None or not spec.figures:
        return None
    try:
        return FAMILIES[spec.figures]
    except KeyError:
        raise SentinelError(f"{check} declares the figure family {spec.figures!r}, which the "
                            f"report does not draw (known: {', '.join(sorted(FAMILIES))})"
                            ) from None


#: The sections' inputs, read by the forked workers of :func:`by_check`.
_JOBS: dict[tuple[str, str], tuple[Family | None, list[Case], list, list]] = {}


def _section_figures(key: tuple[str, str]) -> Figures:
    draw, mine, sessions, found = _JOBS[key]
    # Trends where a change point is: flat ones say nothing the table does not,
    # and at a site they were half of the report's figures.
    return [*(draw(mine) if draw else []), *(trends.draw(sessions, found) if found else [])]


def by_check(cases: list[Case], history: list[tuple[dict, list[Case]]], found: list,
             workers: int = 0) -> dict[tuple[str, str], Figures]:
    """Every figure of the test cases' detail sections, keyed by (where, check).

    ``history``'s sessions are split once by (where, check), so each
    section's trends read only its own test cases; a section has its trends
    drawn when one of its series has a change point. The sections are drawn by
    ``workers`` forked processes (0: one per CPU): a site's report has a
    thousand figures, and matplotlib draws on one core.
    """
    groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for c in cases:
        groups[(c.where, c.check)].append(c)
    past: dict[tuple[str, str], dict[int, list[Case]]] = defaultdict(lambda: defaultdict(list))
    for i, (_, stored) in enumerate(history):
        for c in stored:
            if (c.where, c.check) in groups:
                past[(c.where, c.check)][i].append(c)
    changed: dict[tuple[str, str], list] = defaultdict(list)
    for change in found:
        changed[(change.where, change.test.split(" ")[0])].append(change)
    _JOBS.clear()
    for key, mine in groups.items():
        sessions = [(history[i][0], stored) for i, stored in sorted(past[key].items())]
        _JOBS[key] = (family(key[1]), mine, sessions, changed.get(key, []))
    # the biggest sections first, so that no worker is left with one at the end
    keys = sorted(_JOBS, key=lambda k: (-len(_JOBS[k][1]), k))
    try:
        # one section at a time: a fabric section costs ten others
        drawn = forked_map(_section_figures, keys, workers)
    finally:
        _JOBS.clear()
    return dict(sorted(zip(keys, drawn)))
