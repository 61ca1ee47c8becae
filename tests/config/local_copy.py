"""The suite's real configuration, copied, for test configurations that add to it.

A test configuration loads this file by path (ReFrame loads configuration
files outside any package) and calls :func:`local_copy`.
"""

import copy
import importlib.util
from pathlib import Path


def local_copy() -> tuple[dict, dict, dict]:
    """A deep copy of ``config/settings.py``'s configuration, its local environments
    by name and the local system's first partition (both inside the copy)."""
    settings = Path(__file__).resolve().parents[2] / "config" / "settings.py"
    spec = importlib.util.spec_from_file_location("sentinel_real_settings", settings)
    real = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real)
    configuration = copy.deepcopy(real.site_configuration)
    envs = {e["name"]: e for e in configuration["environments"]
            if "local" in e.get("target_systems", [])}
    local = next(s for s in configuration["systems"] if s["name"] == "local")
    return configuration, envs, local["partitions"][0]
