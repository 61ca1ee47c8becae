"""FabricCheck's figures: the node-pair matrices of each sweep, and its other modes."""

from __future__ import annotations

import re
from collections import defaultdict

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from sentinel.analysis import fabric as fabric_analysis
from sentinel.analysis import fabric_sweep
from sentinel.errors import SentinelError
from sentinel.results.report.figures import style
from sentinel.results.report.figures.style import Figures
from sentinel.results.report.load import Case
from sentinel.results.report.tables import natural

#: The heatmaps' colour: times worse than the sweep's level, 1/8x ... 8x;
#: grey where no pair is (a node and itself).
_WORSE = LogNorm(1 / 8, 8, clip=True)
_WORSE_MAP = matplotlib.colormaps["RdBu_r"].with_extremes(bad="0.8")

_AGGREGATE = re.compile(r"aggregate_bw_P\d+")
_PATTERN = re.compile(r"(\w+)_(onnode|offnode)_bw")


def _named(outliers: str, what: str) -> tuple[set[str], set[tuple[str, str]]]:
    """The nodes and links a sweep named for ``what`` (its ``outliers`` lines)."""
    nodes = set(re.findall(rf"^node (\S+): {what} ", outliers, re.M))
    links: set[tuple[str, str]] = set()
    for a, way, b in re.findall(rf"^link (\S+) (<?->) (\S+): {what} ", outliers, re.M):
        links |= {(a, b), (b, a)} if way == "<->" else {(a, b)}
    return nodes, links


def _mark(ax, nodes: list[str], named: tuple[set[str], set[tuple[str, str]]]) -> None:
    """Tick labels for the nodes, the named ones in red; a red box round each named link."""
    at = {n: i for i, n in enumerate(nodes)}
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
    _mark(ax, nodes, named)
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


def _pairs(members: list[Case]) -> Figures:
    """One figure per partition and environment: a row per pairs sweep (transport).

    Bandwidth and latency side by side, one colour bar for all (times worse
    than each sweep's own level): a figure per sweep with a colour bar per
    matrix was a third of a site's report time.
    """
    rows = []
    for c in members:
        try:
            rows.append((c, fabric_sweep.pairs_from_json(c.extra["fabric_pairs"], c.name)))
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
    style.title(fig, title, fontsize=9)
    return [(title, style.png(fig))]


def _values(c: Case) -> dict[str, float]:
    return {n: v.value for n, v in c.variables.items() if v.value is not None}


def _kind(c: Case) -> str:
    """Which of the sweep's other modes a test case measured ('' for none)."""
    values = _values(c)
    if any(_AGGREGATE.fullmatch(n) for n in values):
        return "aggregate bandwidth of k pairs"
    if "latency_idle" in values and "latency_loaded" in values:
        return "latency idle and under load"
    if any(_PATTERN.fullmatch(n) for n in values):
        return "permutation patterns"
    return ""


def _short(c: Case) -> str:
    return " ".join(x for x in (c.transport, c.mapping) if x) or c.label


def _aggregate(ax, members: list[Case]) -> None:
    """A line per transport: the summed bandwidth of k concurrent node pairs."""
    for c in members:
        agg = {int(n.rsplit("P", 1)[1]): v for n, v in _values(c).items()
               if _AGGREGATE.fullmatch(n)}
        ks = sorted(agg)
        ax.plot(ks, [agg[k] for k in ks], marker="o", markersize=3, label=_short(c))
    ax.set_xlabel("concurrent node pairs k", fontsize=8)
    ax.set_ylabel("summed bandwidth (MB/s)", fontsize=8)
    ax.legend(fontsize=6)


def _latency(ax, members: list[Case]) -> None:
    """Per transport, the 8-byte latency on an idle fabric and with the others streaming."""
    ys = range(len(members))
    idle = [_values(c)["latency_idle"] for c in members]
    loaded = [_values(c)["latency_loaded"] for c in members]
    ax.barh([y + 0.2 for y in ys], idle, height=0.4, color="grey", label="idle fabric")
    ax.barh([y - 0.2 for y in ys], loaded, height=0.4, color="firebrick",
            label="others streaming")
    ax.set_yticks(list(ys), [f"{_short(c)} (x{b / a:.2f})"
                             for c, a, b in zip(members, idle, loaded)], fontsize=7)
    ax.set_xlabel("8-byte latency, one way (us)", fontsize=8)
    ax.legend(fontsize=6)


def _patterns(fig: Figure, members: list[Case]) -> None:
    """On-node and off-node: transports by traffic pattern, the accepted bandwidth as colour."""
    got = {(_short(c), m.group(1), m.group(2)): v for c in members
           for n, v in _values(c).items() if (m := _PATTERN.fullmatch(n))}
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


def _mode(kind: str, members: list[Case]) -> Figure:
    """The figure of one mode other than the pairs sweep, every transport in it."""
    if kind.startswith("permutation"):
        fig = plt.figure(figsize=(11, 1.8 + 0.25 * len(members)))
        _patterns(fig, members)
        fig.subplots_adjust(left=0.15, right=0.98, bottom=0.35, top=0.85, wspace=0.1)
        return fig
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.3 * len(members)))
    fig.subplots_adjust(left=0.3, right=0.97, bottom=0.2, top=0.85)
    (_aggregate if kind.startswith("aggregate") else _latency)(ax, members)
    ax.grid(True, alpha=0.3)
    return fig


def _modes(cases: list[Case]) -> Figures:
    """Per partition, environment and mode of the sweep, every transport in one figure.

    The aggregate bandwidth a line per transport, the latency idle and loaded
    two bars per transport, the traffic patterns a transport x pattern map:
    a panel per transport was most of a site's report time.
    """
    groups: dict[tuple[str, str, str, str], list[Case]] = defaultdict(list)
    for c in cases:
        kind = _kind(c)
        if kind:
            groups[(f"{c.system}:{c.partition}", c.environ, c.check, kind)].append(c)
    out = []
    for (part, env, check, kind), members in sorted(groups.items()):
        members.sort(key=lambda c: (natural(c.transport), c.mapping))
        fig = _mode(kind, members)
        title = f"{check} {kind}, {env} on {part}"
        style.title(fig, title)
        out.append((title, style.png(fig)))
    return out


def draw(cases: list[Case]) -> Figures:
    """FabricCheck's figures.

    Per partition and environment, the pair matrices of each pairs sweep as
    heatmaps with the named nodes and links in red; per mode of the others (the
    aggregate-bandwidth curve, latency idle against loaded, the patterns'
    accepted bandwidth on-node and off-node), every transport in one figure.
    """
    mine = sorted(cases, key=lambda c: (c.where, c.name))
    out: Figures = []
    sweeps: dict[str, list[Case]] = defaultdict(list)
    for c in mine:
        if "fabric_pairs" in c.extra:
            sweeps[c.where].append(c)
    for where in sorted(sweeps):
        out += _pairs(sorted(sweeps[where], key=lambda c: (natural(c.transport),
                                                            c.mapping, c.name)))
    return out + _modes([c for c in mine if "fabric_pairs" not in c.extra])
