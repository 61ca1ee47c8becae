"""The report's figures, drawn with matplotlib and embedded as PNG data URIs.

Each figure family returns ``(title, data_uri)`` pairs: nothing is fetched
when the HTML is opened, so the report works offline and can be mailed.
Every title names all that tells its figure apart (check, what is drawn,
environment, transport, mapping, the other parameters, partition), so no two
figures of one report share one. Many curves become small multiples: a
panel per transport (or per mode), on shared axes. Everywhere the same
marks (:mod:`.style`): the measured values solid with their 95 % interval
shaded in the line's colour, fits and models dashed, reference bands grey.

A check's declaration names its figure family (``CheckSpec.figures``);
:data:`.sections.FAMILIES` draws each under that name, and :func:`by_check`
draws every section of a report.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display: before any module of the package imports pyplot

from sentinel.results.report.figures.sections import FAMILIES, by_check  # noqa: E402

__all__ = ["FAMILIES", "by_check"]
