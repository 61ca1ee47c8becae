"""ReFrame layer: base tests, plugins, build fixtures and variant naming.

The one sanity path lives in :mod:`sentinel.rfm.base`. Imports the analysis,
mpi, parsers and site layers; nothing imports it but ``checks/`` and
``config/``.
"""
