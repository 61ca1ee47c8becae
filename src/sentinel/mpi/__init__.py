"""MPI families, their transports, placement and how each is verified."""

from sentinel.mpi.transports import CATALOGUE, Transport, lookup

__all__ = ["CATALOGUE", "Transport", "lookup"]
