"""The report's figures, drawn with matplotlib and embedded as PNG data URIs.

Each function returns ``(title, data_uri)`` pairs: nothing is fetched when
the HTML is opened, so the report works offline and can be mailed. Every
title names all that tells its figure apart (check, what is drawn,
environment, transport, mapping, the other parameters, partition), so no two
figures of one report share one. Many curves become small multiples: a
panel per transport (or per mode), on shared axes. Everywhere the same
marks: the measured values solid with their 95 % interval shaded in the
line's colour, fits and models dashed, reference bands grey.
"""

from __future__ import annotations

import base64
import io
import re
import statistics
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # no display: before pyplot is imported
# A title at a fixed height: placing it above the tick labels measured every
# label of every panel again, a third of a figure's time.
matplotlib.rcParams["axes.titley"] = 1.0
matplotlib.rcParams["axes.titlepad"] = 3.0
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

from sentinel.analysis import fabric as fabric_analysis  # noqa: E402
from sentinel.errors import SentinelError  # noqa: E402
from sentinel.results.report.load import Case, Variable, forked_map  # noqa: E402
from sentinel.results.report.tables import natural  # noqa: E402

Figures = list[tuple[str, str]]


def _curve_point(var: Variable) -> tuple[str, str, int] | None:
    """(kind, prefix, size) of a point of a declared point-to-point curve.

    The prefix (``pingpong_`` for IMB) names the fit drawn with the curve.
    """
    decl = var.decl
    if decl is None or not decl.curve:
        return None
    size = int(decl.match(var.name)["size"])
    return decl.curve, decl.template.split(decl.curve)[0], size


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def who(c: Case) -> str:
    """``environ transport mapping`` and the other parameters that tell test cases apart."""
    return " ".join(x for x in (c.label, c.variant) if x)


def _grid(panels: int, width: float = 3.2, height: float = 2.6,
          columns: int = 4) -> tuple[Figure, list]:
    """A figure of ``panels`` small multiples on shared axes, ``columns`` to a row.

    Margins in inches, not a layout engine: matplotlib's constrained layout
    drew every figure twice and took half of the report's time.
    """
    cols = min(panels, columns)
    rows = -(-panels // cols)
    # wide enough for a title naming every parameter, even over one panel
    w, h = max(7.0, 0.9 + width * cols), 1.0 + height * rows
    fig, axes = plt.subplots(rows, cols, figsize=(w, h), sharex=True, sharey=True,
                             squeeze=False, gridspec_kw={
                                 "left": 0.8 / w, "right": 1 - 0.15 / w, "bottom": 0.55 / h,
                                 "top": 1 - 0.7 / h, "wspace": 0.08, "hspace": 0.3})
    flat = [ax for row in axes for ax in row]
    for ax in flat[panels:]:
        ax.set_visible(False)
    # few ticks (each costs a millisecond or two to build); shared by every panel
    flat[0].locator_params(nbins=4)
    return fig, flat[:panels]


def _title(fig: Figure, title: str, fontsize: int = 10) -> None:
    """The figure's title, its top a tenth of an inch below the figure's, whatever its height."""
    fig.suptitle(title, fontsize=fontsize, wrap=True, y=1 - 0.08 / fig.get_figheight(),
                 va="top")


def _count(x: float, _pos: object = None) -> str:
    """A tick label of a count or size: 512, 4K, 16M (binary prefixes)."""
    for div, suffix in ((2**30, "G"), (2**20, "M"), (2**10, "K")):
        if x >= div:
            return f"{x / div:g}{suffix}"
    return f"{x:g}"


def _log_axes(ax) -> None:
    """Log axes (base 2 on x) with major ticks only, labelled in plain text.

    Minor ticks cost a line each to draw, and matplotlib's default log
    labels (``2^{10}``) go through its TeX parser: together most of a
    figure's time.
    """
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=6))
    ax.yaxis.set_major_locator(LogLocator(numticks=5))
    ax.xaxis.set_major_formatter(FuncFormatter(_count))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:g}"))
    ax.minorticks_off()
    ax.tick_params(labelsize=7)


#: The height of a row of a figure's legend (6-point labels), inches.
_LEGEND_ROW = 0.14


def _legend(fig: Figure, axes: list) -> None:
    """One legend for the figure, each label once (a legend per panel was slow to lay out).

    The panels must draw a label in the same colour everywhere (:func:`_colour`).
    """
    seen: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    if not seen:
        return
    # Between the figure's title and the panels' titles (:func:`_grid`'s top
    # margin holds one row), the figure taller by the rows beyond the first.
    ncol = min(4, len(seen))
    extra = _LEGEND_ROW * (-(-len(seen) // ncol) - 1)
    h = fig.get_figheight()
    top, bottom = (1 - fig.subplotpars.top) * h, fig.subplotpars.bottom * h
    fig.set_figheight(h + extra)
    fig.subplots_adjust(top=1 - (top + extra) / (h + extra), bottom=bottom / (h + extra))
    fig.legend(list(seen.values()), list(seen), loc="upper center", fontsize=6, ncol=ncol,
               frameon=False, bbox_to_anchor=(0.5, 1 - 0.3 / (h + extra)))


def _colour(colours: dict[str, str], label: str) -> str:
    """The colour of ``label`` in one figure: the same in every panel."""
    return colours.setdefault(label, f"C{len(colours) % 10}")


def _labels(axes: list, x: str, y: str) -> None:
    """Axis labels on the outer panels of a grid (the others share them)."""
    for ax in axes:
        ax.set_xlabel(x, fontsize=8)
        ax.set_ylabel(y, fontsize=8)
        ax.label_outer()


def _reference(ax, xs: list, lo: list, hi: list, labelled: bool) -> None:
    """A reference band, drawn the same way in every figure."""
    ax.fill_between(xs, lo, hi, color="0.6", alpha=0.3, linewidth=0,
                    label="reference band" if labelled else None)


def _fitted(ax, xs: list, ys: list, color: str, label: str | None) -> None:
    """A fit or a model, drawn the same way in every figure."""
    ax.plot(xs, ys, linestyle="--", color=color, linewidth=0.9, label=label)


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
    lam, b = (case.variables.get(f"{prefix}fit_lambda"), case.variables.get(f"{prefix}fit_bw"))
    if lam and b and lam.value is not None and b.value:
        return lam.value, b.value
    return None


def _curve_panel(ax, cases: list[Case], kind: str, colours: dict[str, str]) -> bool:
    """One transport's curves: a line per mapping (and prefix, and other parameters)."""
    drawn = False
    for case in sorted(cases, key=lambda c: (c.mapping, c.variant)):
        for prefix, points in sorted(_series(case, kind).items()):
            sizes = sorted(points)
            label = " ".join(x for x in (case.mapping, case.variant, prefix.strip("_")) if x)
            label = label or case.label
            line, = ax.plot(sizes, [points[s][0] for s in sizes], marker=".", markersize=3,
                            label=label, color=_colour(colours, label))
            drawn = True
            spread = [(s, points[s][1]) for s in sizes if points[s][1]]
            if spread:
                ax.fill_between([s for s, _ in spread], [i[0] for _, i in spread],
                                [i[1] for _, i in spread], color=line.get_color(), alpha=0.2,
                                linewidth=0)
            fit = _fit(case, prefix)
            if fit:
                lam, b = fit  # us, MB/s: t = lambda + size / b, size in bytes = 1e-6 MB
                t = [lam + s / b for s in sizes]
                _fitted(ax, sizes, t if kind == "latency" else [s / x for s, x in zip(sizes, t)],
                        line.get_color(), None)
            banded = [(s, points[s][2]) for s in sizes if points[s][2]]
            if banded:
                _reference(ax, [s for s, _ in banded],
                           [b[0] if b[0] is not None else points[s][0] for s, b in banded],
                           [b[1] if b[1] is not None else points[s][0] for s, b in banded],
                           False)
    return drawn


_KINDS = {"latency": ("latency", "us"), "bw": ("bandwidth", "MB/s")}


def curves(cases: list[Case]) -> Figures:
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
            fig, axes = _grid(len(transports))
            colours: dict[str, str] = {}
            for ax, transport in zip(axes, transports):
                _curve_panel(ax, by_transport[transport], kind, colours)
                _log_axes(ax)
                ax.set_title(transport or "(no transport parameter)", fontsize=9)
                ax.grid(True, alpha=0.3)
            _labels(axes, "message size (bytes)", f"{word} ({unit})")
            _legend(fig, axes)
            title = f"{check} {word} against message size, {env} on {part}"
            _title(fig, title)
            out.append((title, _png(fig)))
    return out


def _bound(case: Case, name: str) -> float | None:
    """The bound of an unresolved variable (its reason starts ``< BOUND UNIT``)."""
    unresolved = case.extra.get("unresolved")
    why = unresolved.get(name, "") if isinstance(unresolved, dict) else ""
    m = re.match(r"< (\S+) ", str(why))
    return float(m.group(1)) if m else None


def matching(cases: list[Case]) -> Figures:
    """Matching time M (per queue element): per partition and environment.

    A bar per transport and mapping for the ping-pong pattern, tag and
    communicator algorithms, with its 95 % interval; an unresolved M is drawn
    as its bound, hatched.
    """
    groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for c in cases:
        if c.check == "MatchingCheck" and c.result == "pass":
            groups[(f"{c.system}:{c.partition}", c.environ)].append(c)
    out = []
    for (part, env), members in sorted(groups.items()):
        # The ping-pong M per algorithm; the queue-pattern variants are in the table.
        names = [n for n in ("match_time_tag", "match_time_comm")
                 if any(n in c.variables or _bound(c, n) is not None for c in members)]
        if not names:
            continue
        members.sort(key=lambda c: (natural(c.transport), c.mapping, c.variant))
        h = 1.2 + 0.3 * len(members) * max(1, len(names))
        fig, ax = plt.subplots(figsize=(8, h))
        fig.subplots_adjust(left=0.3, right=0.97, bottom=0.6 / h, top=1 - 0.4 / h)
        height = 0.8 / len(names)
        for i, name in enumerate(names):
            ys = [j + i * height for j in range(len(members))]
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
        ax.set_yticks([j + 0.4 - height / 2 for j in range(len(members))],
                      [who(c).removeprefix(f"{env} ") for c in members],
                      fontsize=7)
        ax.set_xlabel("matching time M per queue element (ns)")
        ax.legend(fontsize=7)
        title = f"MatchingCheck matching time per queue element, {env} on {part}"
        ax.set_title(title, fontsize=10)
        out.append((title, _png(fig)))
    return out


def _jacobi_values(case: Case) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for var in case.variables.values():
        fields = var.decl.match(var.name) if var.decl else None
        if fields and "n" in fields and var.value is not None:
            out[var.name[:-len(f"_N{fields['n']}")]][int(fields["n"])] = var.value
    return out


def jacobi(cases: list[Case]) -> Figures:
    """Jacobi: per partition, environment, transport and mapping, a panel per mode.

    Top row: MLUP/s measured (solid) and modelled (dashed) against the ranks
    N; bottom row: the time per iteration of each phase.
    """
    groups: dict[tuple[str, str, str, str], list[Case]] = defaultdict(list)
    for c in cases:
        if c.check == "JacobiCheck" and c.result == "pass" and "mlups" in _jacobi_values(c):
            groups[(f"{c.system}:{c.partition}", c.environ, c.transport, c.mapping)].append(c)
    out = []
    for (part, env, transport, mapping), members in sorted(groups.items()):
        members.sort(key=lambda c: natural(c.variant))
        cols = len(members)
        w = max(7.0, 0.9 + 2.8 * cols)
        fig, axes = plt.subplots(2, cols, figsize=(w, 5.4), sharey="row", squeeze=False,
                                 gridspec_kw={"left": 0.8 / w, "right": 1 - 0.15 / w,
                                              "bottom": 0.1, "top": 0.88, "hspace": 0.3,
                                              "wspace": 0.08})
        for k, c in enumerate(members):
            _jacobi_panels(axes[0][k], axes[1][k], _jacobi_values(c), k == 0)
            axes[0][k].set_title(c.variant or "(one variant)", fontsize=8)
        axes[0][0].set_ylabel("MLUP/s")
        axes[1][0].set_ylabel("s per iteration")
        title = (f"JacobiCheck MLUP/s and time per phase, {env} "
                 f"{' '.join(x for x in (transport, mapping) if x)} on {part}")
        _title(fig, title)
        out.append((title, _png(fig)))
    return out


def _jacobi_panels(top, bottom, vals: dict[str, dict[int, float]], legend: bool) -> None:
    ns = sorted(vals["mlups"])
    top.plot(ns, [vals["mlups"][n] for n in ns], marker="o", label="measured")
    if vals.get("model_mlups"):
        mn = sorted(vals["model_mlups"])
        _fitted(top, mn, [vals["model_mlups"][n] for n in mn], "C1", "model")
    top.set_xticks(ns)
    top.grid(True, alpha=0.3)
    phases = sorted(k for k in vals if k.startswith("t_") and k != "t_sweep")
    bottom_of = [0.0] * len(ns)
    for i, phase in enumerate(phases):
        heights = [vals[phase].get(n, 0.0) for n in ns]
        bottom.bar([str(n) for n in ns], heights, bottom=bottom_of, label=phase[2:],
                   color=f"C{i + 2}")
        bottom_of = [b + h for b, h in zip(bottom_of, heights)]
    bottom.set_xlabel("ranks N")
    if legend:
        top.legend(fontsize=7)
        bottom.legend(fontsize=7)


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


def scaling(cases: list[Case]) -> Figures:
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
        panels: dict[str, dict[str, dict[int, float]]] = defaultdict(dict)
        for c in members:
            for panel, lines in _scaling_panels(c).items():
                for size, points in lines.items():
                    key = panel if size == panel else f"{panel} {size}"
                    panels[key][who(c).removeprefix(f"{env} ")] = points
        units = {v.unit for c in members for v in c.variables.values()
                 if v.decl and v.decl.scaling}
        fig, axes = _grid(len(panels), width=3.0, height=2.4)
        colours: dict[str, str] = {}
        for ax, (panel, lines) in zip(axes, sorted(panels.items(), key=lambda kv: natural(kv[0]))):
            for label, points in lines.items():
                counts = sorted(points)
                ax.plot(counts, [points[p] for p in counts], marker="o", markersize=3,
                        label=label, color=_colour(colours, label))
            _log_axes(ax)
            ax.set_title(panel, fontsize=8)
            ax.grid(True, alpha=0.3)
        _labels(axes, "processes P", " / ".join(sorted(units)))
        _legend(fig, axes)
        title = f"{check} against the process count, {env} on {part}"
        _title(fig, title)
        out.append((title, _png(fig)))
    return out


def _named(outliers: str, what: str) -> tuple[set[str], set[tuple[str, str]]]:
    """The nodes and links a sweep named for ``what`` (its ``outliers`` lines)."""
    nodes = set(re.findall(rf"^node (\S+): {what} ", outliers, re.M))
    links: set[tuple[str, str]] = set()
    for a, way, b in re.findall(rf"^link (\S+) (<?->) (\S+): {what} ", outliers, re.M):
        links |= {(a, b), (b, a)} if way == "<->" else {(a, b)}
    return nodes, links


#: The heatmaps' colour: times worse than the sweep's level, 1/8x ... 8x;
#: grey where no pair is (a node and itself).
_WORSE = LogNorm(1 / 8, 8, clip=True)
_WORSE_MAP = matplotlib.colormaps["RdBu_r"].with_extremes(bad="0.8")


def _heatmap(ax, pairs: list, value: str, named: tuple[set[str], set[tuple[str, str]]],
             title: str) -> AxesImage:
    """The N x N matrix of one quantity, sender by row; named nodes and links in red.

    The colour is each pair's value over the sweep's level (the median of the
    node medians, :func:`sentinel.analysis.fabric.level`), turned so that
    red is worse for bandwidth and latency alike: what the verdict reads,
    on one scale for every transport of a figure.
    """
    higher = value == "bw_mbs"
    nodes = sorted({p.src for p in pairs} | {p.dst for p in pairs}, key=natural)
    at = {n: i for i, n in enumerate(nodes)}
    grid = [[float("nan")] * len(nodes) for _ in nodes]
    mid = fabric_analysis.level(pairs, higher)
    for p in pairs:
        v = getattr(p, value)
        grid[at[p.src]][at[p.dst]] = mid / v if higher else v / mid
    image = ax.imshow(grid, cmap=_WORSE_MAP, norm=_WORSE, interpolation="nearest")
    bad_nodes, bad_links = named
    # every node up to 16; beyond, every 8th and those named (a tick label each is slow)
    shown = [i for i, n in enumerate(nodes) if len(nodes) <= 16 or i % 8 == 0
             or n in bad_nodes or any(n in link for link in bad_links)]
    ax.set_xticks(shown, [nodes[i] for i in shown], rotation=90, fontsize=7)
    ax.set_yticks(shown, [nodes[i] for i in shown], fontsize=7)
    for label in [*ax.get_xticklabels(), *ax.get_yticklabels()]:
        if label.get_text() in bad_nodes:
            label.set_color("red")
            label.set_fontweight("bold")
    for a, b in bad_links:
        ax.add_patch(plt.Rectangle((at[b] - 0.5, at[a] - 0.5), 1, 1, fill=False,
                                   edgecolor="red", linewidth=2))
    unit = "MB/s" if higher else "us"
    ax.set_title(f"{title}, level {mid:.4g} {unit}", fontsize=8)
    return image


def _worse_bar(fig: Figure, image: AxesImage, cax) -> None:
    """The heatmaps' one colour bar: 1/8x ... 8x the level, worse upwards."""
    bar = fig.colorbar(image, cax=cax, ticks=[1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8])
    bar.ax.set_yticklabels(["8x better", "4x", "2x", "level", "2x", "4x", "8x worse"],
                           fontsize=7)
    bar.ax.minorticks_off()


def _sweep(c: Case) -> str:
    """What tells one pairs sweep of a partition and environment from another."""
    rest = " ".join(p for p in c.variant.split() if p != "mode=pairs")
    return " ".join(x for x in (c.transport, c.mapping, rest) if x)


def _fabric_pairs(members: list[Case]) -> Figures:
    """One figure per partition and environment: a row per pairs sweep (transport).

    Bandwidth and latency side by side, one colour bar for all (times worse
    than each sweep's own level): a figure per sweep with a colour bar per
    matrix was a third of a site's report time.
    """
    rows = []
    for c in members:
        try:
            rows.append((c, fabric_analysis.pairs_from_json(c.extra["fabric_pairs"], c.name)))
        except SentinelError:
            continue  # a report of another version: the variables table still has the values
    if not rows:
        return []
    h = 1.1 + 3.0 * len(rows)
    top = 1 - 0.8 / h
    fig, axes = plt.subplots(len(rows), 2, figsize=(8.5, h), squeeze=False, gridspec_kw={
        "left": 0.1, "right": 0.84, "bottom": 0.5 / h, "top": top, "wspace": 0.35,
        "hspace": 0.45})
    named = []
    for (c, pairs), (bw, lat) in zip(rows, axes):
        outliers = str(c.extra.get("outliers", ""))
        image = _heatmap(bw, pairs, "bw_mbs", _named(outliers, "bandwidth"),
                         f"{_sweep(c)}: bandwidth")
        _heatmap(lat, pairs, "latency_us", _named(outliers, "latency"), "latency")
        bw.set_ylabel("sender", fontsize=8)
        named += [f"{_sweep(c)}: {line}" for line in outliers.splitlines() if line]
    for ax in axes[-1]:
        ax.set_xlabel("receiver", fontsize=8)
    _worse_bar(fig, image, fig.add_axes((0.9, top - 2.4 / h, 0.02, 2.4 / h)))  # 1st row
    more = f"; and {len(named) - 3} more (the table)" if len(named) > 3 else ""
    c = rows[0][0]
    title = (f"{c.check} node pairs, {c.environ} on {c.system}:{c.partition}: "
             f"{'; '.join(named[:3]) + more if named else 'no outlier'}")
    _title(fig, title, fontsize=9)
    return [(title, _png(fig))]


def _fabric_values(c: Case) -> dict[str, float]:
    return {n: v.value for n, v in c.variables.items() if v.value is not None}


def _fabric_kind(c: Case) -> str:
    """Which of the sweep's other modes a test case measured ('' for none)."""
    values = _fabric_values(c)
    if any(re.fullmatch(r"aggregate_bw_P\d+", n) for n in values):
        return "aggregate bandwidth of k pairs"
    if "latency_idle" in values and "latency_loaded" in values:
        return "latency idle and under load"
    if any(re.fullmatch(r"\w+_(onnode|offnode)_bw", n) for n in values):
        return "permutation patterns"
    return ""


def _fabric_aggregate(ax, members: list[Case]) -> None:
    """A line per transport: the summed bandwidth of k concurrent node pairs."""
    for c in members:
        agg = {int(n.rsplit("P", 1)[1]): v for n, v in _fabric_values(c).items()
               if re.fullmatch(r"aggregate_bw_P\d+", n)}
        ks = sorted(agg)
        ax.plot(ks, [agg[k] for k in ks], marker="o", markersize=3, label=_short(c))
    ax.set_xlabel("concurrent node pairs k", fontsize=8)
    ax.set_ylabel("summed bandwidth (MB/s)", fontsize=8)
    ax.legend(fontsize=6)


def _fabric_latency(ax, members: list[Case]) -> None:
    """Per transport, the 8-byte latency on an idle fabric and with the others streaming."""
    ys = range(len(members))
    idle = [_fabric_values(c)["latency_idle"] for c in members]
    loaded = [_fabric_values(c)["latency_loaded"] for c in members]
    ax.barh([y + 0.2 for y in ys], idle, height=0.4, color="grey", label="idle fabric")
    ax.barh([y - 0.2 for y in ys], loaded, height=0.4, color="firebrick",
            label="others streaming")
    ax.set_yticks(list(ys), [f"{_short(c)} (x{b / a:.2f})"
                             for c, a, b in zip(members, idle, loaded)], fontsize=7)
    ax.set_xlabel("8-byte latency, one way (us)", fontsize=8)
    ax.legend(fontsize=6)


def _fabric_patterns(fig: Figure, members: list[Case]) -> None:
    """On-node and off-node: transports by traffic pattern, the accepted bandwidth as colour."""
    got = {(_short(c), m.group(1), m.group(2)): v for c in members
           for n, v in _fabric_values(c).items()
           if (m := re.fullmatch(r"(\w+)_(onnode|offnode)_bw", n))}
    rows = [_short(c) for c in members]
    names = sorted({k[1] for k in got}, key=fabric_analysis.PATTERNS.index)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, side in zip(axes, ("onnode", "offnode")):
        grid = [[got.get((r, n, side), float("nan")) for n in names] for r in rows]
        image = ax.imshow(grid, cmap="viridis", aspect="auto")
        fig.colorbar(image, ax=ax, shrink=0.9, label="accepted MB/s per rank")
        ax.set_xticks(range(len(names)), names, rotation=60, fontsize=7)
        ax.set_yticks(range(len(rows)), rows, fontsize=7)
        ax.set_title(side.replace("node", "-node"), fontsize=8)


def _short(c: Case) -> str:
    return " ".join(x for x in (c.transport, c.mapping) if x) or c.label


def _fabric_modes(cases: list[Case]) -> Figures:
    """Per partition, environment and mode of the sweep, every transport in one figure.

    The aggregate bandwidth a line per transport, the latency idle and loaded
    two bars per transport, the traffic patterns a transport x pattern map:
    a panel per transport was most of a site's report time.
    """
    groups: dict[tuple[str, str, str], list[Case]] = defaultdict(list)
    for c in cases:
        kind = _fabric_kind(c)
        if kind:
            groups[(f"{c.system}:{c.partition}", c.environ, kind)].append(c)
    out = []
    for (part, env, kind), members in sorted(groups.items()):
        members.sort(key=lambda c: (natural(c.transport), c.mapping))
        if kind.startswith("permutation"):
            fig = plt.figure(figsize=(11, 1.8 + 0.25 * len(members)))
            _fabric_patterns(fig, members)
            fig.subplots_adjust(left=0.15, right=0.98, bottom=0.35, top=0.85, wspace=0.1)
        else:
            fig, ax = plt.subplots(figsize=(8, 1.6 + 0.3 * len(members)))
            fig.subplots_adjust(left=0.3, right=0.97, bottom=0.2, top=0.85)
            (_fabric_aggregate if kind.startswith("aggregate") else _fabric_latency)(ax, members)
            ax.grid(True, alpha=0.3)
        title = f"FabricCheck {kind}, {env} on {part}"
        _title(fig, title)
        out.append((title, _png(fig)))
    return out


def fabric(cases: list[Case]) -> Figures:
    """FabricCheck's figures.

    Per partition and environment, the pair matrices of each pairs sweep as
    heatmaps with the named nodes and links in red; per mode of the others (the
    aggregate-bandwidth curve, latency idle against loaded, the patterns'
    accepted bandwidth on-node and off-node), a panel per transport.
    """
    mine = sorted((c for c in cases if c.check == "FabricCheck"),
                  key=lambda c: (c.where, c.name))
    out: Figures = []
    sweeps: dict[str, list[Case]] = defaultdict(list)
    for c in mine:
        if "fabric_pairs" in c.extra:
            sweeps[c.where].append(c)
    for where in sorted(sweeps):
        out += _fabric_pairs(sorted(sweeps[where], key=lambda c: (natural(c.transport),
                                                                   c.mapping, c.name)))
    return out + _fabric_modes([c for c in mine if "fabric_pairs" not in c.extra])


def trends(history: list[tuple[dict, list[Case]]], found: list | None = None) -> Figures:
    """The headline variables over the stored sessions: per partition, environment and check.

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
        fig, axes = _grid(len(names), width=3.4, height=2.3, columns=3)
        for ax, name in zip(axes, names):
            _trend_panel(ax, variables[name], changed.get((part, env, name), []), newest)
            ax.set_title(f"{name} ({units[name]})", fontsize=8)
            ax.tick_params(labelsize=7)
        # days, not dates: a date axis took a third of the report's time at site scale
        _labels(axes, "days before the newest session", "value / its median")
        title = (f"{check} headline variables over {len(times)} stored sessions, "
                 f"{env} on {part}")
        _title(fig, title)
        out.append((title, _png(fig)))
    return out


def _trend_variables(history: list[tuple[dict, list[Case]]]
                     ) -> dict[tuple[str, str, str], dict[str, dict[str, list]]]:
    """(partition, environ, check) -> headline variable -> test case -> [(time, value)]."""
    lines: dict[tuple[str, str, str], dict[str, dict[str, list]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for info, cases in history:
        t = float(info.get("time_start_unix") or 0)
        for c in cases:
            for var in c.variables.values():
                if var.headline and var.declared_value is not None:
                    lines[(f"{c.system}:{c.partition}", c.environ, c.check)][var.name][
                        c.name].append((t, var.declared_value))
    return lines


def _trend_panel(ax, per_test: dict[str, list], found: list, newest: float) -> None:
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


#: The sections' inputs, read by the forked workers of :func:`by_check`.
_JOBS: dict[tuple[str, str], tuple[list[Case], list, list]] = {}


def _section_figures(key: tuple[str, str]) -> Figures:
    mine, sessions, found = _JOBS[key]
    # Trends where a change point is: flat ones say nothing the table does not,
    # and at a site they were half of the report's figures.
    return [*curves(mine), *matching(mine), *jacobi(mine), *scaling(mine), *fabric(mine),
            *(trends(sessions, found) if found else [])]


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
        _JOBS[key] = (mine, sessions, changed.get(key, []))
    # the biggest sections first, so that no worker is left with one at the end
    keys = sorted(_JOBS, key=lambda k: (-len(_JOBS[k][0]), k))
    try:
        # one section at a time: a fabric section costs ten others
        drawn = forked_map(_section_figures, keys, workers)
    finally:
        _JOBS.clear()
    return dict(sorted(zip(keys, drawn)))
