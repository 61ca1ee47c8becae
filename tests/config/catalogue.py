"""Test configuration: the real one plus ``catalogue_site``, which offers every catalogue entry.

One Slurm partition of 2 nodes and one environment per MPI family whose
features name every transport of the family, and each transport over IP
pinned to ``ib0`` too (the production pairs follow from their halves): a
listing of it shows that every entry generates.
"""

import copy
import runpy
from pathlib import Path

from sentinel.mpi.transports import CATALOGUE, FAMILIES, lookup

_config = Path(__file__).resolve().parents[2] / "config"
site_configuration = runpy.run_path(str(_config / "settings.py"))["site_configuration"]
_example = runpy.run_path(str(_config / "systems" / "example_cluster.py"))


def _features(family: str) -> list[str]:
    # A production pair is offered by its halves: a feature may not hold '+'.
    own = [t for t in CATALOGUE.values() if t.family == family and not t.halves]
    names = [t.name for t in own]
    pinned = [lookup(family, f"{t.name}-ib0").name for t in own if t.interface_vars]
    return ["mpi", family, *names, *pinned]


_system = copy.deepcopy(_example["system"])
_system.update(name="catalogue_site", hostnames=["^catalogue-login$"],
               partitions=[_system["partitions"][0]],
               prefix=next(s["prefix"] for s in site_configuration["systems"]))
_system["partitions"][0]["environs"] = list(FAMILIES)
site_configuration["systems"].append(_system)
for _family in FAMILIES:
    site_configuration["environments"].append(
        {"name": _family, "target_systems": ["catalogue_site"], "cc": "mpicc",
         "features": _features(_family)})
