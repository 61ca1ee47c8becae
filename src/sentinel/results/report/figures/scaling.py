"""Series over process counts: each quantity against the count, a line per test case.

The family of every check whose declaration has variables of such a series
(``PerfVar.scaling``): the collectives, the ring, the barrier splits.
"""

from __future__ import annotations

import re
from collections import defaultdict

from sentinel.results.report.figures import style
from sentinel.results.report.figures.style import Figures
from sentinel.results.report.load import Case
from sentinel.results.report.tables import natural


def _scaling_lines(case: Case) -> dict[str, dict[int, float]]:
    """Per variable without its process count: process count -> value."""
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for var in case.variables.values():
        field = var.decl.scaling if var.decl else ""
        fields = var.decl.match(var.name) if field else None
        if fields and var.value is not None:
            line = var.decl.template.replace(f"{{{field}}}", "*").format(**fields)
            out[line][int(fields[field])] = var.value
    return out


def _scaling_panels(case: Case) -> dict[str, dict[str, dict[int, float]]]:
    """The lines of :func:`_scaling_lines`, a panel per quantity: the name before its size."""
    panels: dict[str, dict[str, dict[int, float]]] = defaultdict(dict)
    for line, points in _scaling_lines(case).items():
        m = re.match(r"(.*?)_(\d+B)_", line)
        panel, label = (m.group(1), m.group(2)) if m else (line, line)
        panels[panel][label] = points
    return panels


def _panels(members: list[Case], env: str) -> dict[str, dict[str, dict[int, float]]]:
    """Panel (quantity and size) -> line (test case) -> process count -> value."""
    panels: dict[str, dict[str, dict[int, float]]] = defaultdict(dict)
    for c in members:
        for panel, lines in _scaling_panels(c).items():
            for size, points in lines.items():
                key = panel if size == panel else f"{panel} {size}"
                panels[key][style.who(c).removeprefix(f"{env} ")] = points
    return panels


def draw(cases: list[Case]) -> Figures:
    """Series over process counts: per partition, environment and check.

    A panel per quantity (and message size), a line per test case (its
    transport, mapping and other parameters), in the same colour in every
    panel.
    """
    groups: dict[tuple[str, str, str], list[Case]] = defaultdict(list)
    for c in cases:
        if c.result == "pass" and _scaling_lines(c):
            groups[(f"{c.system}:{c.partition}", c.environ, c.check)].append(c)
    out = []
    for (part, env, check), members in sorted(groups.items()):
        members.sort(key=lambda c: (natural(c.transport), c.mapping, natural(c.variant)))
        panels = _panels(members, env)
        units = {v.unit for c in members for v in c.variables.values()
                 if v.decl and v.decl.scaling}
        fig, axes = style.grid(len(panels), width=3.0, height=2.4)
        colours: dict[str, str] = {}
        for ax, (panel, lines) in zip(axes, sorted(panels.items(), key=lambda kv: natural(kv[0]))):
            for label, points in lines.items():
                counts = sorted(points)
                ax.plot(counts, [points[p] for p in counts], marker="o", markersize=3,
                        label=label, color=style.colour(colours, label))
            style.log_axes(ax)
            ax.set_title(panel, fontsize=8)
            ax.grid(True, alpha=0.3)
        style.labels(axes, "processes P", " / ".join(sorted(units)))
        style.legend(fig, axes)
        title = f"{check} against the process count, {env} on {part}"
        style.title(fig, title)
        out.append((title, style.png(fig)))
    return out
