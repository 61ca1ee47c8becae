"""ReFrame configuration of MPI Sentinel: ``reframe -C config/settings.py``.

Common settings come from ``common.py``; each ``systems/<system>.py``
contributes a ``system`` dict and its ``environments``. Sites add a file
there (copy ``example_cluster.py``). ``local`` matches any host and is tried
last, so a site file whose ``hostnames`` match wins; and when a site file is
the system in use (its ``hostnames`` match this host, or ``--system`` /
``RFM_SYSTEM`` names it), ``local.py`` is not loaded at all, so none of its
probes of this host run.
"""

import importlib.util
import os
import re
import shlex
import socket
import sys
from pathlib import Path

from sentinel.rfm.compat import cmdline

_HERE = Path(__file__).resolve().parent


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"sentinel_config_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _requested_system() -> str | None:
    """The system named by ``--system`` (or ``RFM_SYSTEM``), without its partition."""
    names = [os.environ.get("RFM_SYSTEM"), *cmdline.given(None, "--system")]
    name = [n for n in names if n][-1:]
    return name[0].split(":", 1)[0] if name else None


def _with_prgenvs(modes: list[dict], patterns: list[str]) -> list[dict]:
    """Each mode with the command line's ``-p`` patterns among its options.

    ReFrame (4.10) appends the command line's ``-p`` to the mode's, and a mode
    without ``-p`` contributes the default ``.*``, which matches every
    environment: ``--mode quick -p openmpi`` ran every MPI. Given in the mode
    too, the patterns are all the selection has.
    """
    extra = [arg for p in patterns for arg in ("-p", shlex.quote(p))]
    return [{**mode, "options": [*mode["options"], *extra]} for mode in modes]


def _site_modes(modules: list, common: list[dict]) -> list[dict]:
    """Each site file's ``modes``, then the common ones.

    A site mode named like a common one runs the common mode's options and
    then its own, on the site's ``target_systems`` only: ReFrame takes the
    first mode of a name that targets the system in use.
    """
    by_name = {mode["name"]: mode for mode in common}
    out = []
    for module in modules:
        for mode in getattr(module, "modes", []):
            base = by_name.get(mode["name"], {"options": []})
            out.append({**mode, "options": [*base["options"], *mode["options"]]})
    return out + common


def _in_use(module, requested: str | None) -> bool:
    if requested:
        return module.system["name"] == requested
    host = socket.gethostname()
    return any(re.match(pattern, host) for pattern in module.system["hostnames"])


def _check_set_options() -> None:
    """Stop with the reason when a ``-S`` value cannot be given to its test."""
    from reframe.core.exceptions import ConfigError

    from sentinel.rfm.compat.setvars import set_option_problems

    problems = set_option_problems(cmdline.argv()[1:], [_HERE.parent / "checks"])
    if problems:
        raise ConfigError("bad -S value(s):\n  " + "\n  ".join(problems))


def _declare_features(configuration: dict) -> None:
    """Every environment's features, for the checks ``-S`` loads before ReFrame does."""
    from sentinel.rfm.compat.offered import declare

    declare([set(env.get("features", [])) for env in configuration["environments"]])


def _warn_topology(configuration: dict, system: str) -> None:
    """Once per partition: a processor key a thread level needs that its config lacks."""
    from sentinel.mpi.thread_levels import processor_gaps

    for sys_ in configuration["systems"]:
        for part in sys_["partitions"] if sys_["name"] == system else []:
            gaps = processor_gaps(f"{system}:{part['name']}", part.get("processor") or {})
            if gaps and "mpi" in part.get("features", []):
                print(f"mpi-sentinel: {gaps}", file=sys.stderr)


def _check_references(configuration: dict, system: str) -> None:
    """Stop before any test runs when the system's reference file is broken."""
    from reframe.core.exceptions import ConfigError

    from sentinel.paths import references_dir
    from sentinel.results.references import systems_from_config, validate_file

    path = references_dir() / f"{system}.yaml"
    systems = systems_from_config(configuration)
    if not path.exists() or system not in systems:
        # No file: each test says "no reference" (and fails in acceptance). A
        # system another -C file adds is not known here to validate against.
        return
    problems = validate_file(path, systems)
    if problems:
        raise ConfigError(f"{path}: {len(problems)} problem(s); no test runs on a broken "
                          "reference file (sentinel calibrate writes a valid one):\n  "
                          + "\n  ".join(problems))


_RUN_BY_REFRAME = cmdline.run_by_reframe()
_common = _load(_HERE / "common.py")
_site_files = sorted(p for p in (_HERE / "systems").glob("*.py") if p.stem != "local")
_systems = [_load(p) for p in _site_files]
_requested = _requested_system()
# A system requested by name that is not local's (a site file, or one another
# -C file adds) needs none of local's probes of this host.
if _requested in (None, "local") and not any(_in_use(m, _requested) for m in _systems):
    _systems.append(_load(_HERE / "systems" / "local.py"))

for _m in _systems:
    # Stage and output directories go under $SENTINEL_OUTPUT/var unless a
    # site file chooses its own prefix.
    _m.system.setdefault("prefix", str(_common.VAR))

site_configuration = {
    "systems": [m.system for m in _systems],
    "environments": [env for m in _systems for env in m.environments],
    "general": _common.general,
    "logging": _common.logging,
    "modes": _with_prgenvs(_site_modes(_systems, _common.modes),
                           cmdline.given("-p", "--prgenv")),
    "storage": _common.storage,
}

if _RUN_BY_REFRAME:
    _in_use_now = [m.system["name"] for m in _systems if _in_use(m, _requested)]
    _system = _requested or (_in_use_now[0] if _in_use_now else "local")
    _declare_features(site_configuration)
    _check_set_options()
    _check_references(site_configuration, _system)
    _warn_topology(site_configuration, _system)
