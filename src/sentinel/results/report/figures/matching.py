"""MatchingCheck's figure: the matching time per queue element, a bar per test case."""

from __future__ import annotations

import re
from collections import defaultdict

import matplotlib.pyplot as plt

from sentinel.results.report.figures import style
from sentinel.results.report.figures.style import Figures
from sentinel.results.report.load import Case
from sentinel.results.report.tables import natural

#: The ping-pong M per algorithm; the queue-pattern variants are in the table.
_NAMES = ("match_time_tag", "match_time_comm")


def _bound(case: Case, name: str) -> float | None:
    """The bound of an unresolved variable (its reason starts ``< BOUND UNIT``)."""
    unresolved = case.extra.get("unresolved")
    why = unresolved.get(name, "") if isinstance(unresolved, dict) else ""
    m = re.match(r"< (\S+) ", str(why))
    return float(m.group(1)) if m else None


def _bars(ax, members: list[Case], name: str, ys: list[float], height: float) -> None:
    """The bars of one algorithm's M with their intervals; the bounds of the unresolved, hatched."""
    xs, errs, bounds = [], [[], []], []
    for c in members:
        var = c.variables.get(name)
        value = (var.declared_value if var is not None else None) or 0.0
        lo, hi = var.interval if var is not None and var.interval else (value, value)
        xs.append(value)
        errs[0].append(value - lo)
        errs[1].append(hi - value)
        bounds.append(_bound(c, name) or 0.0)
    bar = ax.barh(ys, xs, height=height, xerr=errs, capsize=2,
                  label=f"{name} [95 % interval]")
    ax.barh(ys, bounds, height=height, fill=False, hatch="//",
            edgecolor=bar.patches[0].get_facecolor(), label=f"{name} unresolved: < bound")


def draw(cases: list[Case]) -> Figures:
    """Matching time M (per queue element): per partition and environment.

    A bar per transport and mapping for the ping-pong pattern, tag and
    communicator algorithms, with its 95 % interval; an unresolved M is drawn
    as its bound, hatched.
    """
    groups: dict[tuple[str, str, str], list[Case]] = defaultdict(list)
    for c in cases:
        if c.result == "pass":
            groups[(f"{c.system}:{c.partition}", c.environ, c.check)].append(c)
    out = []
    for (part, env, check), members in sorted(groups.items()):
        names = [n for n in _NAMES
                 if any(n in c.variables or _bound(c, n) is not None for c in members)]
        if not names:
            continue
        members.sort(key=lambda c: (natural(c.transport), c.mapping, c.variant))
        h = 1.2 + 0.3 * len(members) * max(1, len(names))
        fig, ax = plt.subplots(figsize=(8, h))
        fig.subplots_adjust(left=0.3, right=0.97, bottom=0.6 / h, top=1 - 0.4 / h)
        height = 0.8 / len(names)
        for i, name in enumerate(names):
            _bars(ax, members, name, [j + i * height for j in range(len(members))], height)
        ax.set_yticks([j + 0.4 - height / 2 for j in range(len(members))],
                      [style.who(c).removeprefix(f"{env} ") for c in members],
                      fontsize=7)
        ax.set_xlabel("matching time M per queue element (ns)")
        ax.legend(fontsize=7)
        title = f"{check} matching time per queue element, {env} on {part}"
        ax.set_title(title, fontsize=10)
        out.append((title, style.png(fig)))
    return out
