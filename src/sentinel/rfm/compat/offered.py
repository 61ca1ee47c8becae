"""The environment features of the configuration, for checks loaded before ReFrame's runtime.

ReFrame evaluates a check's parameters when the check file is imported. The
configuration checks ``-S`` values by importing the check files before
ReFrame has a runtime (:mod:`sentinel.rfm.compat.setvars`): the parameters are then
the whole catalogue, which lacks the transports an environment pins to an
interface by name (``ob1-tcp-ib0``), so the configuration declares every
environment's features here first.
"""

from __future__ import annotations

_FEATURES: list[set[str]] | None = None


def declare(features: list[set[str]]) -> None:
    """The features of each environment of the configuration."""
    global _FEATURES
    _FEATURES = [set(f) for f in features]


def declared_features() -> list[set[str]]:
    """What :func:`declare` was given (nothing: [])."""
    return _FEATURES or []
