"""The Orfeo worked site, copied under another name, for test configurations that vary it.

A test configuration loads this file by path (ReFrame loads configuration
files outside any package) and calls :func:`orfeo_copy`.
"""

import copy
import runpy
from pathlib import Path

_CONFIG = Path(__file__).resolve().parents[2] / "config"


def orfeo_copy(name: str) -> tuple[dict, dict, list[dict]]:
    """The suite's configuration with ``config/systems/orfeo.py`` added again as ``name``.

    Returns the configuration, the copied system and its environments (both
    inside the configuration), to be changed by the caller.
    """
    configuration = runpy.run_path(str(_CONFIG / "settings.py"))["site_configuration"]
    orfeo = runpy.run_path(str(_CONFIG / "systems" / "orfeo.py"))
    system = copy.deepcopy(orfeo["system"])
    # the stage and output directories every system of the suite has
    system.update(name=name, hostnames=[f"^{name}-login$"],
                  prefix=next(s["prefix"] for s in configuration["systems"]))
    configuration["systems"].append(system)
    envs = copy.deepcopy(orfeo["environments"])
    for env in envs:
        env["target_systems"] = [name]
    configuration["environments"] += envs
    return configuration, system, envs
