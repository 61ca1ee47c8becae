"""The marks and layout every figure family shares, and the PNG each figure becomes."""

from __future__ import annotations

import base64
import io

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator

from sentinel.results.report.load import Case

# A title at a fixed height: placing it above the tick labels measured every
# label of every panel again, a third of a figure's time.
matplotlib.rcParams["axes.titley"] = 1.0
matplotlib.rcParams["axes.titlepad"] = 3.0

#: A family's figures: ``(title, PNG data URI)`` pairs.
Figures = list[tuple[str, str]]

#: The height of a row of a figure's legend (6-point labels), inches.
_LEGEND_ROW = 0.14


def png(fig: Figure) -> str:
    """``fig`` as a PNG data URI; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def who(c: Case) -> str:
    """``environ transport mapping`` and the other parameters that tell test cases apart."""
    return " ".join(x for x in (c.label, c.variant) if x)


def grid(panels: int, width: float = 3.2, height: float = 2.6,
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


def title(fig: Figure, text: str, fontsize: int = 10) -> None:
    """The figure's title, its top a tenth of an inch below the figure's, whatever its height."""
    fig.suptitle(text, fontsize=fontsize, wrap=True, y=1 - 0.08 / fig.get_figheight(),
                 va="top")


def _count(x: float, _pos: object = None) -> str:
    """A tick label of a count or size: 512, 4K, 16M (binary prefixes)."""
    for div, suffix in ((2**30, "G"), (2**20, "M"), (2**10, "K")):
        if x >= div:
            return f"{x / div:g}{suffix}"
    return f"{x:g}"


def log_axes(ax) -> None:
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


def legend(fig: Figure, axes: list) -> None:
    """One legend for the figure, each label once (a legend per panel was slow to lay out).

    The panels must draw a label in the same colour everywhere (:func:`colour`).
    """
    seen: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    if not seen:
        return
    # Between the figure's title and the panels' titles (:func:`grid`'s top
    # margin holds one row), the figure taller by the rows beyond the first.
    ncol = min(4, len(seen))
    extra = _LEGEND_ROW * (-(-len(seen) // ncol) - 1)
    h = fig.get_figheight()
    top, bottom = (1 - fig.subplotpars.top) * h, fig.subplotpars.bottom * h
    fig.set_figheight(h + extra)
    fig.subplots_adjust(top=1 - (top + extra) / (h + extra), bottom=bottom / (h + extra))
    fig.legend(list(seen.values()), list(seen), loc="upper center", fontsize=6, ncol=ncol,
               frameon=False, bbox_to_anchor=(0.5, 1 - 0.3 / (h + extra)))


def colour(colours: dict[str, str], label: str) -> str:
    """The colour of ``label`` in one figure: the same in every panel."""
    return colours.setdefault(label, f"C{len(colours) % 10}")


def labels(axes: list, x: str, y: str) -> None:
    """Axis labels on the outer panels of a grid (the others share them)."""
    for ax in axes:
        ax.set_xlabel(x, fontsize=8)
        ax.set_ylabel(y, fontsize=8)
        ax.label_outer()


def reference(ax, xs: list, lo: list, hi: list, labelled: bool) -> None:
    """A reference band, drawn the same way in every figure."""
    ax.fill_between(xs, lo, hi, color="0.6", alpha=0.3, linewidth=0,
                    label="reference band" if labelled else None)


def fitted(ax, xs: list, ys: list, color: str, label: str | None) -> None:
    """A fit or a model, drawn the same way in every figure."""
    ax.plot(xs, ys, linestyle="--", color=color, linewidth=0.9, label=label)
