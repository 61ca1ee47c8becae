"""The followed variables over the stored sessions, each change point marked.

Drawn for any check, beside its family's figures, where one of its series
has a change point (:func:`sentinel.results.report.figures.by_check`).
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from matplotlib.collections import LineCollection

from sentinel.results.report.figures import style
from sentinel.results.report.figures.style import Figures
from sentinel.results.report.load import Case
from sentinel.results.report.tables import natural

#: (partition, environ, check) -> followed variable -> test case -> [(time, value)].
Lines = dict[tuple[str, str, str], dict[str, dict[str, list]]]


def _trend_variables(history: list[tuple[dict, list[Case]]]) -> Lines:
    """(partition, environ, check) -> followed variable -> test case -> [(time, value)]."""
    lines: Lines = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for info, cases in history:
        t = float(info.get("time_start_unix") or 0)
        for c in cases:
            for var in c.variables.values():
                if var.followed and var.declared_value is not None:
                    lines[(f"{c.system}:{c.partition}", c.environ, c.check)][var.name][
                        c.name].append((t, var.declared_value))
    return lines


def _panel(ax, per_test: dict[str, list], found: list, newest: float) -> None:
    """One variable: a line per test case over its median, each change point a dashed line."""
    marked = {c.test for c in found}
    grey = []
    for test, pts in sorted(per_test.items()):
        pts.sort()
        middle = statistics.median(v for _, v in pts) or 1.0
        line = [((t - newest) / 86400, v / middle) for t, v in pts]
        if test in marked:
            ax.plot(*zip(*line), marker=".", linewidth=1.2,
                    label=" ".join(p for p in test.split(" %build")[0].split(" %")[1:]))
        else:
            grey.append(line)
    # the unchanged test cases as one artist: a site has hundreds per panel
    ax.add_collection(LineCollection(grey, colors="0.7", linewidths=0.6))
    ax.autoscale_view()
    for change in found:
        ax.axvline((change.after.time - newest) / 86400,
                   color="red" if change.verdict == "regression" else "green",
                   linestyle="--", linewidth=1)
    ax.grid(True, alpha=0.3)
    if marked:
        ax.legend(fontsize=5)


def draw(history: list[tuple[dict, list[Case]]], found: list | None = None) -> Figures:
    """The followed variables over the stored sessions: per partition, environment and check.

    A panel per variable; a line per test case, its value over its own median
    (so that test cases of any scale share the axes and a step stands out).
    A test case with a change point is drawn in colour, the change point's
    first session dashed (red: a regression); the others are grey.
    """
    lines = _trend_variables(history)
    units = {v.name: v.decl.unit for _, cases in history for c in cases
             for v in c.variables.values() if v.decl is not None}
    times = {info.get("time_start_unix") for info, _ in history}
    changed: dict[tuple[str, str, str], list] = defaultdict(list)
    for change in found or []:
        part, env = change.where.split("+", 1)
        changed[(part, env, change.variable)].append(change)
    newest = max((t for t in times if t), default=0.0)
    out = []
    for (part, env, check), variables in sorted(lines.items()):
        names = sorted((n for n, per in variables.items()
                        if max(len(v) for v in per.values()) >= 2), key=natural)
        if not names:
            continue  # one session is a point, not a trend
        fig, axes = style.grid(len(names), width=3.4, height=2.3, columns=3)
        for ax, name in zip(axes, names):
            _panel(ax, variables[name], changed.get((part, env, name), []), newest)
            ax.set_title(f"{name} ({units[name]})", fontsize=8)
            ax.tick_params(labelsize=7)
        # days, not dates: a date axis took a third of the report's time at site scale
        style.labels(axes, "days before the newest session", "value / its median")
        title = (f"{check} followed variables over {len(times)} stored sessions, "
                 f"{env} on {part}")
        style.title(fig, title)
        out.append((title, style.png(fig)))
    return out
