"""The report's figures, drawn with matplotlib and embedded as PNG data URIs.

Each function returns ``(title, data_uri)`` pairs: nothing is fetched when
the HTML is opened, so the report works offline and can be mailed.
"""

from __future__ import annotations

import base64
import io
import re
from collections import defaultdict
from datetime import datetime, timezone

import matplotlib

matplotlib.use("Agg")  # no display: before pyplot is imported
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from sentinel.analysis import fabric as fabric_analysis  # noqa: E402
from sentinel.analysis.variables import NEUTRAL  # noqa: E402
from sentinel.errors import SentinelError  # noqa: E402
from sentinel.results.report.load import Case, Variable  # noqa: E402
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
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _series(case: Case, kind: str) -> dict[str, dict[int, tuple]]:
    """Per prefix: size -> (value, band) of the ``kind`` curve of one test case."""
    out: dict[str, dict[int, tuple]] = defaultdict(dict)
    for var in case.variables.values():
        point = _curve_point(var)
        if point and point[0] == kind and var.value is not None and point[2] > 0:
            out[point[1]][point[2]] = (var.value, var.band if var.referenced else None)
    return out


def _fit(case: Case, prefix: str) -> tuple[float, float] | None:
    lam, b = (case.variables.get(f"{prefix}fit_lambda"), case.variables.get(f"{prefix}fit_bw"))
    if lam and b and lam.value is not None and b.value:
        return lam.value, b.value
    return None


def _curve_axes(ax, cases: list[Case], kind: str) -> bool:
    drawn = False
    for case in sorted(cases, key=lambda c: c.label):
        for prefix, points in _series(case, kind).items():
            sizes = sorted(points)
            values = [points[s][0] for s in sizes]
            line, = ax.plot(sizes, values, marker=".", label=f"{case.label} {prefix}".strip())
            drawn = True
            fit = _fit(case, prefix)
            if fit:
                lam, b = fit  # us, MB/s: t = lambda + size / b, size in bytes = 1e-6 MB
                t = [lam + s / b for s in sizes]
                ax.plot(sizes, t if kind == "latency" else [s / x for s, x in zip(sizes, t)],
                        linestyle="--", color=line.get_color(), linewidth=0.8)
            banded = [(s, points[s][1]) for s in sizes if points[s][1]]
            if banded:
                lo = [b[0] if b[0] is not None else points[s][0] for s, b in banded]
                hi = [b[1] if b[1] is not None else points[s][0] for s, b in banded]
                ax.fill_between([s for s, _ in banded], lo, hi, color=line.get_color(),
                                alpha=0.15)
    return drawn


def curves(cases: list[Case]) -> Figures:
    """Latency and bandwidth against message size, per partition and check.

    Dashed: the fit t = lambda + size/b; shaded: the reference band.
    """
    groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for c in cases:
        if c.result == "pass" and any(_curve_point(v) for v in c.variables.values()):
            groups[(f"{c.system}:{c.partition}", c.check)].append(c)
    out = []
    for (part, check), members in sorted(groups.items()):
        for kind, unit in (("latency", "us"), ("bw", "MB/s")):
            fig, ax = plt.subplots(figsize=(8, 4.2))
            if not _curve_axes(ax, members, kind):
                plt.close(fig)
                continue
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("message size (bytes)")
            ax.set_ylabel(f"{'latency' if kind == 'latency' else 'bandwidth'} ({unit})")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7, ncol=2)
            title = f"{check} {'latency' if kind == 'latency' else 'bandwidth'} on {part}"
            ax.set_title(title)
            out.append((title, _png(fig)))
    return out


def _bound(case: Case, name: str) -> float | None:
    """The bound of an unresolved variable (its reason starts ``< BOUND UNIT``)."""
    unresolved = case.extra.get("unresolved")
    why = unresolved.get(name, "") if isinstance(unresolved, dict) else ""
    m = re.match(r"< (\S+) ", str(why))
    return float(m.group(1)) if m else None


def matching(cases: list[Case]) -> Figures:
    """Matching time M (per queue element) of each transport, per partition.

    Bars for the ping-pong pattern, tag and communicator algorithms, with
    their 95 % intervals; an unresolved M is drawn as its bound, hatched.
    """
    groups: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        if c.check == "MatchingCheck" and c.result == "pass":
            groups[f"{c.system}:{c.partition}"].append(c)
    out = []
    for part, members in sorted(groups.items()):
        # The ping-pong M per algorithm; the queue-pattern variants are in the table.
        names = [n for n in ("match_time_tag", "match_time_comm")
                 if any(n in c.variables or _bound(c, n) is not None for c in members)]
        if not names:
            continue
        members.sort(key=lambda c: c.label)
        fig, ax = plt.subplots(figsize=(8, 0.5 + 0.35 * len(members) * max(1, len(names))))
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
                      [c.label for c in members], fontsize=7)
        ax.set_xlabel("matching time M (ns)")
        ax.legend(fontsize=7)
        title = f"Message matching time on {part}"
        ax.set_title(title)
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
    """Per Jacobi test case: MLUP/s measured and modelled per N; time per phase."""
    out = []
    for c in sorted(cases, key=lambda c: (c.where, c.name)):
        if c.check != "JacobiCheck" or c.result != "pass":
            continue
        vals = _jacobi_values(c)
        if "mlups" not in vals:
            continue
        fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
        ns = sorted(vals["mlups"])
        left.plot(ns, [vals["mlups"][n] for n in ns], marker="o", label="measured")
        if vals.get("model_mlups"):
            mn = sorted(vals["model_mlups"])
            left.plot(mn, [vals["model_mlups"][n] for n in mn], marker="x", linestyle="--",
                      label="model")
        left.set_xlabel("ranks N")
        left.set_ylabel("MLUP/s")
        left.set_xticks(ns)
        left.legend(fontsize=7)
        phases = sorted(k for k in vals if k.startswith("t_") and k != "t_sweep")
        bottom = [0.0] * len(ns)
        for phase in phases:
            heights = [vals[phase].get(n, 0.0) for n in ns]
            right.bar([str(n) for n in ns], heights, bottom=bottom, label=phase[2:])
            bottom = [b + h for b, h in zip(bottom, heights)]
        right.set_xlabel("ranks N")
        right.set_ylabel("s per iteration")
        right.legend(fontsize=7)
        title = f"Jacobi {c.label} on {c.system}:{c.partition}"
        fig.suptitle(title, fontsize=10)
        out.append((title, _png(fig)))
    return out


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


def scaling(cases: list[Case]) -> Figures:
    """Per test case of a process-count series: each variable against the process count."""
    out = []
    for c in sorted(cases, key=lambda c: (c.where, c.name)):
        lines = _scaling_lines(c) if c.result == "pass" else {}
        if not lines:
            continue
        fig, ax = plt.subplots(figsize=(8, 4.2))
        for name, points in sorted(lines.items()):
            counts = sorted(points)
            ax.plot(counts, [points[p] for p in counts], marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("processes P")
        units = {v.unit for v in c.variables.values() if v.decl and v.decl.scaling}
        ax.set_ylabel(" / ".join(sorted(units)))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, ncol=3)
        title = f"{c.check} {c.label} on {c.system}:{c.partition}"
        ax.set_title(title, fontsize=10)
        out.append((title, _png(fig)))
    return out


def _named(outliers: str, what: str) -> tuple[set[str], set[tuple[str, str]]]:
    """The nodes and links a sweep named for ``what`` (its ``outliers`` lines)."""
    nodes = set(re.findall(rf"^node (\S+): {what} ", outliers, re.M))
    links: set[tuple[str, str]] = set()
    for a, way, b in re.findall(rf"^link (\S+) (<?->) (\S+): {what} ", outliers, re.M):
        links |= {(a, b), (b, a)} if way == "<->" else {(a, b)}
    return nodes, links


def _heatmap(ax, pairs: list, value: str, named: tuple[set[str], set[tuple[str, str]]],
             title: str) -> None:
    """The N x N matrix of one quantity, sender by row; named nodes and links in red."""
    nodes = sorted({p.src for p in pairs} | {p.dst for p in pairs}, key=natural)
    at = {n: i for i, n in enumerate(nodes)}
    grid = [[float("nan")] * len(nodes) for _ in nodes]
    for p in pairs:
        grid[at[p.src]][at[p.dst]] = getattr(p, value)
    image = ax.imshow(grid, cmap="viridis" if value == "bw_mbs" else "viridis_r")
    ax.figure.colorbar(image, ax=ax, shrink=0.8,
                       label="MB/s" if value == "bw_mbs" else "us (8 B, one way)")
    ax.set_xticks(range(len(nodes)), nodes, rotation=90, fontsize=7)
    ax.set_yticks(range(len(nodes)), nodes, fontsize=7)
    ax.set_xlabel("receiver")
    ax.set_ylabel("sender")
    bad_nodes, bad_links = named
    for label in [*ax.get_xticklabels(), *ax.get_yticklabels()]:
        if label.get_text() in bad_nodes:
            label.set_color("red")
            label.set_fontweight("bold")
    for a, b in bad_links:
        ax.add_patch(plt.Rectangle((at[b] - 0.5, at[a] - 0.5), 1, 1, fill=False,
                                   edgecolor="red", linewidth=2))
    ax.set_title(title, fontsize=9)


def _fabric_pairs(c: Case) -> Figures:
    try:
        pairs = fabric_analysis.pairs_from_json(c.extra["fabric_pairs"], c.name)
    except SentinelError:
        return []  # a report of another version: the variables table still has the values
    fig, (bw, lat) = plt.subplots(1, 2, figsize=(11, 4.6))
    outliers = str(c.extra.get("outliers", ""))
    _heatmap(bw, pairs, "bw_mbs", _named(outliers, "bandwidth"), "bandwidth")
    _heatmap(lat, pairs, "latency_us", _named(outliers, "latency"), "latency")
    named = outliers.replace("\n", "; ") or "no outlier"
    title = f"{c.check} pairs {c.label} on {c.system}:{c.partition}: {named}"
    fig.suptitle(title, fontsize=9)
    return [(title, _png(fig))]


def _fabric_modes(c: Case) -> Figures:
    values = {n: v.value for n, v in c.variables.items() if v.value is not None}
    agg = {int(n.rsplit("P", 1)[1]): v for n, v in values.items()
           if re.fullmatch(r"aggregate_bw_P\d+", n)}
    fig, ax = plt.subplots(figsize=(6, 3.4))
    where = f"{c.label} on {c.system}:{c.partition}"
    if agg:
        ks = sorted(agg)
        ax.plot(ks, [agg[k] for k in ks], marker="o")
        ax.set_xlabel("concurrent node pairs k")
        ax.set_ylabel("summed bandwidth (MB/s)")
        ax.set_xticks(ks)
        title = f"aggregate bandwidth of k pairs, {where}"
    elif "latency_idle" in values and "latency_loaded" in values:
        ax.bar(["idle fabric", "others streaming"],
               [values["latency_idle"], values["latency_loaded"]], color=["grey", "firebrick"])
        ax.set_ylabel("8-byte latency, one way (us)")
        ratio = values["latency_loaded"] / values["latency_idle"]
        title = f"latency idle and under load (x{ratio:.2f}), {where}"
    else:
        bars = sorted((n.rsplit("_", 2)[0], n.rsplit("_", 2)[1], v) for n, v in values.items()
                      if re.fullmatch(r"\w+_(onnode|offnode)_bw", n))
        if not bars:
            plt.close(fig)
            return []
        names = sorted({b[0] for b in bars}, key=fabric_analysis.PATTERNS.index)
        for k, side in enumerate(("onnode", "offnode")):
            got = {p: v for p, w, v in bars if w == side}
            ax.bar([i + 0.4 * k for i in range(len(names))], [got.get(p, 0.0) for p in names],
                   width=0.4, label=side.replace("node", "-node"))
        ax.set_xticks([i + 0.2 for i in range(len(names))], names, rotation=45, fontsize=7)
        ax.set_ylabel("accepted MB/s per rank")
        ax.legend(fontsize=7)
        title = f"permutation patterns, {where}"
    ax.grid(True, alpha=0.3)
    ax.set_title(title, fontsize=9)
    return [(title, _png(fig))]


def fabric(cases: list[Case]) -> Figures:
    """FabricCheck's figures, one per test case.

    The pair matrices as heatmaps with the named nodes and links in red, the
    aggregate-bandwidth curve, latency idle against loaded, the patterns'
    accepted bandwidth on-node and off-node.
    """
    out: Figures = []
    for c in sorted(cases, key=lambda c: (c.where, c.name)):
        if c.check != "FabricCheck":
            continue
        out += _fabric_pairs(c) if "fabric_pairs" in c.extra else _fabric_modes(c)
    return out


def trends(history: list[tuple[dict, list[Case]]], found: list | None = None) -> Figures:
    """Headline variables over the stored sessions, per partition (one line per test).

    ``found``: change points (:class:`sentinel.results.changes.Change`), each
    drawn as a vertical line at its first session, red for a regression.
    """
    points: dict[tuple[str, str], dict[str, list]] = defaultdict(lambda: defaultdict(list))
    modes: dict[float, str] = {}
    better: dict[str, str] = {}
    units: dict[str, str] = {}
    for info, cases in history:
        t = float(info.get("time_start_unix") or 0)
        modes[t] = str((info.get("extras") or {}).get("mode", ""))
        for c in cases:
            for var in c.variables.values():
                if var.headline and var.declared_value is not None:
                    key = (f"{c.system}:{c.partition}", var.name)
                    better[var.name] = var.decl.better
                    units[var.name] = var.decl.unit
                    points[key][f"{c.check} {c.label}"].append((t, var.declared_value))
    out = []
    for (part, name), lines in sorted(points.items()):
        if max(len(v) for v in lines.values()) < 2:
            continue  # one session is a point, not a trend
        fig, ax = plt.subplots(figsize=(8, 3.2))
        for label, pts in sorted(lines.items()):
            ax.plot([datetime.fromtimestamp(t, timezone.utc) for t, _ in pts],
                    [v for _, v in pts], marker="o", label=label)
        for change in found or []:
            if change.variable == name and change.where.split("+")[0] == part:
                ax.axvline(datetime.fromtimestamp(change.after.time, timezone.utc),
                           color="red" if change.verdict == "regression" else "green",
                           linestyle="--", linewidth=1,
                           label=f"change {change.shift:+.0%} ({change.verdict})")
        direction = f" ({better[name]} is better)" if better[name] != NEUTRAL else ""
        ax.set_ylabel(f"{name} ({units[name]}){direction}", fontsize=8)
        ax.legend(fontsize=6, ncol=2)
        fig.autofmt_xdate()
        title = f"{name} on {part} over {len(set(modes))} stored sessions"
        ax.set_title(title, fontsize=10)
        out.append((title, _png(fig)))
    return out
