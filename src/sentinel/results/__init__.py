"""Results layer: reference validation, calibration, verdicts, the report, the CLI.

Reads what runs left behind (run reports, the results database, reference
files). Imports the analysis layer (for the declarations of the performance
variables), :mod:`sentinel.mpi` and :mod:`sentinel.parsers`, never ReFrame's
test classes.
"""
