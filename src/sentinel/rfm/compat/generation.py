"""Which variants a session generates: the transports its system offers, packed jobs if asked.

ReFrame instantiates every variant of a check before it matches
environments (about 2.5-20 ms each), so a variant that could only skip
itself costs every listing of a site: the parameters are pruned here, from
the configuration and the command line, before ReFrame sees them.
"""

from __future__ import annotations

import shlex

from reframe.core import runtime
from reframe.core.exceptions import ReframeFatalError
from reframe.utility import osext

from sentinel.mpi.transports import CATALOGUE, declared, resolve
from sentinel.rfm import packing
from sentinel.rfm.compat import offered
from sentinel.rfm.compat.cmdline import mode, setvar_values


def offered_transports() -> list[str]:
    """Catalogue entries an environment of the selected system offers, and packed jobs.

    Before ReFrame has a runtime (the configuration checking ``-S`` values),
    the whole catalogue, with the transports pinned to an interface that an
    environment of the configuration declares (:mod:`sentinel.rfm.compat.offered`).
    Each family offered also gets its packed job (``openmpi/all``,
    :mod:`sentinel.rfm.packing`) when the session packs transports.
    """
    features = _environ_features()
    if features is None:  # before a runtime: the catalogue and what the configuration pins
        keys = sorted(set(CATALOGUE) | {t.key for f in offered.declared_features()
                                        for t in declared(f)})
    else:
        keys = sorted({t.key for f in features for t in declared(f)})
    if not _packing_asked():
        return keys
    families = sorted({resolve(key).family for key in keys})
    return keys + [packing.packed_key(family) for family in families]


def _environ_features() -> list[set[str]] | None:
    """The features of each environment of the selected system; None before a runtime."""
    try:
        system = runtime.runtime().system
    except ReframeFatalError:
        return None
    return [set(env.features) for part in system.partitions for env in part.environs]


def offers_feature(feature: str) -> bool:
    """Whether an environment of the selected system has ``feature`` (True before a runtime)."""
    features = _environ_features()
    return features is None or any(feature in f for f in features)


def _packing_asked() -> bool:
    """Whether a ``-S`` of the session (its mode's or the command line's) packs transports.

    Before ReFrame has a runtime, packed jobs are generated: the
    configuration checking ``-S`` values sees every variant.
    """
    options = mode_options()
    if options is None:
        return True
    values = setvar_values(options, "pack_transports")
    return any(v.strip().lower() in ("true", "yes", "y", "1") for v in values)


def mode_options() -> list[str] | None:
    """The selected ``--mode``'s options, split as ReFrame splits them; None before a runtime."""
    try:
        site = runtime.runtime().site_config
    except ReframeFatalError:
        return None
    selected = mode()
    options = site.get(f"modes/@{selected}/options") if selected else []
    return [word for arg in options or [] for word in shlex.split(osext.expandvars(arg))]

