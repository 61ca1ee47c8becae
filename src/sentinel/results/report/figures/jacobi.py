"""JacobiCheck's figures: MLUP/s measured and modelled, and the time of each phase."""

from __future__ import annotations

from collections import defaultdict

import matplotlib.pyplot as plt

from sentinel.results.report.figures import style
from sentinel.results.report.figures.style import Figures
from sentinel.results.report.load import Case
from sentinel.results.report.tables import natural


def _values(case: Case) -> dict[str, dict[int, float]]:
    """Per quantity (``mlups``, ``t_halo``...): ranks N -> value."""
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for var in case.variables.values():
        fields = var.decl.match(var.name) if var.decl else None
        if fields and "n" in fields and var.value is not None:
            out[var.name[:-len(f"_N{fields['n']}")]][int(fields["n"])] = var.value
    return out


def _panels(top, bottom, vals: dict[str, dict[int, float]], legend: bool) -> None:
    """One mode: MLUP/s against N on ``top``, the phases stacked on ``bottom``."""
    ns = sorted(vals["mlups"])
    top.plot(ns, [vals["mlups"][n] for n in ns], marker="o", label="measured")
    if vals.get("model_mlups"):
        mn = sorted(vals["model_mlups"])
        style.fitted(top, mn, [vals["model_mlups"][n] for n in mn], "C1", "model")
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


def draw(cases: list[Case]) -> Figures:
    """Jacobi: per partition, environment, transport and mapping, a panel per mode.

    Top row: MLUP/s measured (solid) and modelled (dashed) against the ranks
    N; bottom row: the time per iteration of each phase.
    """
    groups: dict[tuple[str, str, str, str, str], list[Case]] = defaultdict(list)
    for c in cases:
        if c.result == "pass" and "mlups" in _values(c):
            groups[(f"{c.system}:{c.partition}", c.environ, c.check, c.transport,
                    c.mapping)].append(c)
    out = []
    for (part, env, check, transport, mapping), members in sorted(groups.items()):
        members.sort(key=lambda c: natural(c.variant))
        cols = len(members)
        w = max(7.0, 0.9 + 2.8 * cols)
        fig, axes = plt.subplots(2, cols, figsize=(w, 5.4), sharey="row", squeeze=False,
                                 gridspec_kw={"left": 0.8 / w, "right": 1 - 0.15 / w,
                                              "bottom": 0.1, "top": 0.88, "hspace": 0.3,
                                              "wspace": 0.08})
        for k, c in enumerate(members):
            _panels(axes[0][k], axes[1][k], _values(c), k == 0)
            axes[0][k].set_title(c.variant or "(one variant)", fontsize=8)
        axes[0][0].set_ylabel("MLUP/s")
        axes[1][0].set_ylabel("s per iteration")
        title = (f"{check} MLUP/s and time per phase, {env} "
                 f"{' '.join(x for x in (transport, mapping) if x)} on {part}")
        style.title(fig, title)
        out.append((title, style.png(fig)))
    return out
