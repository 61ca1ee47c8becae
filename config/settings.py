"""ReFrame configuration of MPI Sentinel: ``reframe -C config/settings.py``.

Common settings come from ``common.py``; each ``systems/<system>.py``
contributes a ``system`` dict and its ``environments``. Sites add a file
there (copy ``example_cluster.py``). ``local`` matches any host and is tried
last, so a site file whose ``hostnames`` match wins.
"""

import importlib.util
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"sentinel_config_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_common = _load(_HERE / "common.py")
_site_files = sorted(p for p in (_HERE / "systems").glob("*.py") if p.stem != "local")
_systems = [_load(p) for p in _site_files] + [_load(_HERE / "systems" / "local.py")]

for _m in _systems:
    # Stage and output directories go under $SENTINEL_OUTPUT/var unless a
    # site file chooses its own prefix.
    _m.system.setdefault("prefix", str(_common.VAR))

site_configuration = {
    "systems": [m.system for m in _systems],
    "environments": [env for m in _systems for env in m.environments],
    "general": _common.general,
    "logging": _common.logging,
    "modes": _common.modes,
    "storage": _common.storage,
}
