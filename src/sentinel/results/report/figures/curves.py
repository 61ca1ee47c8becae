"""Point-to-point curves: latency and bandwidth against message size, with their fit.

The family of every check whose declaration has curve variables
(``PerfVar.curve``): Pt2ptCheck, and OSU's and IMB's point-to-point runs.
"""

from __future__ import annotations

from collections import defaultdict

from sentinel.results.report.figures import style
from sentinel.results.report.figures.style import Figures
from sentinel.results.report.load import Case, Variable
from sentinel.results.report.tables import natural

#: The curves drawn: kind -> (what it is, unit).
_KINDS = {"latency": ("latency", "us"), "bw": ("bandwidth", "MB/s")}


def _curve_point(var: Variable) -> tuple[str, str, int] | None:
    """(kind, prefix, size) of a point of a declared point-to-point curve.

    The prefix (``pingpong_`` for IMB) names the fit drawn with the curve.
    """
    decl = var.decl
    if decl is None or not decl.curve:
        return None
    size = int(decl.match(var.name)["size"])
    return decl.curve, decl.template.split(decl.curve)[0], size


def _series(case: Case, kind: str) -> dict[str, dict[int, tuple]]:
    """Per prefix: size -> (value, interval, band) of the ``kind`` curve of one test case."""
    out: dict[str, dict[int, tuple]] = defaultdict(dict)
    for var in case.variables.values():
        point = _curve_point(var)
        if point and point[0] == kind and var.value is not None and point[2] > 0:
            out[point[1]][point[2]] = (var.value, var.interval,
                                       var.band if var.referenced else None)
    return out


def _fit(case: Case, prefix: str) -> tuple[float, float] | None:
    """The fit t = lambda + size/b of the curve of ``prefix``: (lambda, b), or None."""
    lam, b = (case.variables.get(f"{prefix}fit_lambda"), case.variables.get(f"{prefix}fit_bw"))
    if lam and b and lam.value is not None and b.value:
        return lam.value, b.value
    return None


def _line(ax, case: Case, prefix: str, points: dict[int, tuple], kind: str,
          colours: dict[str, str]) -> None:
    """One curve: measured, its intervals, its fit and its reference bands."""
    sizes = sorted(points)
    label = " ".join(x for x in (case.mapping, case.variant, prefix.strip("_")) if x)
    label = label or case.label
    line, = ax.plot(sizes, [points[s][0] for s in sizes], marker=".", markersize=3,
                    label=label, color=style.colour(colours, label))
    spread = [(s, points[s][1]) for s in sizes if points[s][1]]
    if spread:
        ax.fill_between([s for s, _ in spread], [i[0] for _, i in spread],
                        [i[1] for _, i in spread], color=line.get_color(), alpha=0.2,
                        linewidth=0)
    fit = _fit(case, prefix)
    if fit:
        lam, b = fit  # us, MB/s: t = lambda + size / b, size in bytes = 1e-6 MB
        t = [lam + s / b for s in sizes]
        style.fitted(ax, sizes, t if kind == "latency" else [s / x for s, x in zip(sizes, t)],
                     line.get_color(), None)
    banded = [(s, points[s][2]) for s in sizes if points[s][2]]
    if banded:
        style.reference(ax, [s for s, _ in banded],
                        [b[0] if b[0] is not None else points[s][0] for s, b in banded],
                        [b[1] if b[1] is not None else points[s][0] for s, b in banded],
                        False)


def _panel(ax, cases: list[Case], kind: str, colours: dict[str, str]) -> None:
    """One transport's curves: a line per mapping (and prefix, and other parameters)."""
    for case in sorted(cases, key=lambda c: (c.mapping, c.variant)):
        for prefix, points in sorted(_series(case, kind).items()):
            _line(ax, case, prefix, points, kind, colours)


def draw(cases: list[Case]) -> Figures:
    """Latency and bandwidth against message size: per partition, environment and check.

    A panel per transport, a line per mapping; dashed: the fit
    t = lambda + size/b; shaded: the 95 % intervals; grey: reference bands.
    """
    groups: dict[tuple[str, str, str], list[Case]] = defaultdict(list)
    for c in cases:
        if c.result == "pass" and any(_curve_point(v) for v in c.variables.values()):
            groups[(f"{c.system}:{c.partition}", c.environ, c.check)].append(c)
    out = []
    for (part, env, check), members in sorted(groups.items()):
        by_transport: dict[str, list[Case]] = defaultdict(list)
        for c in members:
            by_transport[c.transport].append(c)
        transports = sorted(by_transport, key=natural)
        for kind, (word, unit) in _KINDS.items():
            if not any(_series(c, kind) for c in members):
                continue
            fig, axes = style.grid(len(transports))
            colours: dict[str, str] = {}
            for ax, transport in zip(axes, transports):
                _panel(ax, by_transport[transport], kind, colours)
                style.log_axes(ax)
                ax.set_title(transport or "(no transport parameter)", fontsize=9)
                ax.grid(True, alpha=0.3)
            style.labels(axes, "message size (bytes)", f"{word} ({unit})")
            style.legend(fig, axes)
            title = f"{check} {word} against message size, {env} on {part}"
            style.title(fig, title)
            out.append((title, style.png(fig)))
    return out
