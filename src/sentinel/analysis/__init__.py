"""Analysis layer: from parsed records to performance values.

One module per benchmark family (pt2pt, matching, jacobi, hybrid, the
standard suites), the fits they share, and :mod:`sentinel.analysis.variables`:
the single declaration of every performance variable (name, unit, which
direction is better). Imports only :mod:`sentinel.parsers`, :mod:`sentinel.mpi`
and the foundation (:mod:`sentinel.errors`, :mod:`sentinel.paths`).
"""
