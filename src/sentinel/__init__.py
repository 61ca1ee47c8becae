"""MPI Sentinel: the library behind the suite's ReFrame checks.

Transports, placement, output parsers, fits and build fixtures live here so
that the checks under ``checks/`` stay thin.
"""

__version__ = "0.1.0"
