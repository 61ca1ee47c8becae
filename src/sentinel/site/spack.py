"""Building through Spack where an environment has the ``spack`` feature.

The environment's ``extras`` name the Spack environment (``spack_env``: a
directory holding ``spack.yaml``, e.g. ``spack-env/debian``) and the MPI
package its specs depend on (``spack_mpi``, default: the MPI family's Spack
name). Specs are the ones the template lists, so ``spack install <spec>``
needs no ``spack add`` and never edits the environment.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sentinel.errors import SentinelError

#: Spack package of each MPI family.
SPACK_MPI = {"openmpi": "openmpi", "mpich": "mpich", "intelmpi": "intel-oneapi-mpi"}

#: The Spack packages of the standard suites.
SUITE_PACKAGES = {"osu": "osu-micro-benchmarks", "imb": "intel-mpi-benchmarks"}


@dataclass(frozen=True)
class SpackSetup:
    """Where an environment's Spack builds happen."""

    env: str
    mpi: str

    def bench_spec(self, bench: str) -> str:
        """The spec of one of the suite's own benchmarks."""
        return f"sentinel-bench bench={bench} ^{self.mpi}"

    def suite_spec(self, suite: str) -> str:
        """The spec of a standard suite (``osu``, ``imb``)."""
        return f"{SUITE_PACKAGES[suite]} ^{self.mpi}"


def uses_spack(environ) -> bool:
    """Whether the programming environment builds through Spack (``+spack``)."""
    return "spack" in environ.features


def spack_setup(environ) -> SpackSetup:
    """The Spack environment and MPI of a ``+spack`` programming environment."""
    extras = environ.extras
    env = extras.get("spack_env")
    if not env:
        raise SentinelError(f"environment {environ.name} has the 'spack' feature but no "
                            "extras['spack_env'] (the Spack environment directory)")
    if not (Path(env) / "spack.yaml").is_file():
        raise SentinelError(f"environment {environ.name}: extras['spack_env'] = {env} "
                            "holds no spack.yaml")
    family = extras.get("mpi_family", "")
    mpi = extras.get("spack_mpi") or SPACK_MPI.get(family)
    if not mpi:
        raise SentinelError(f"environment {environ.name}: set extras['spack_mpi'] (the Spack "
                            f"package of its MPI); mpi_family {family!r} has no default")
    return SpackSetup(env, mpi)


def externals_yaml(environs) -> str:
    """The ``packages:`` file of Spack externals the environments declare.

    Each environment's ``extras['spack_external']`` is ``{"spec": ..., "prefix":
    ...}`` (and optionally ``"prefix_script"``, a command that makes the
    prefix); environments without one are left out.
    """
    by_package: dict[str, list[dict]] = {}
    for env in environs:
        ext = env.extras.get("spack_external")
        if ext and ext not in by_package.setdefault(ext["spec"].split("@", 1)[0], []):
            by_package[ext["spec"].split("@", 1)[0]].append(ext)
    lines = ["packages:"]
    for package, exts in by_package.items():
        if exts:  # several versions of one MPI are several externals of its package
            lines += [f"  {package}:", "    buildable: false", "    externals:"]
            lines += [x for ext in exts for x in (f"    - spec: {ext['spec']}",
                                                   f"      prefix: {ext['prefix']}")]
    return "\n".join(lines) + "\n"


def externals_commands(environs) -> list[str]:
    """Shell commands a Spack build runs first: make the external prefixes, write the file.

    The externals file is ``$SENTINEL_SPACK_EXTERNALS`` (the Spack
    environment includes it); it is written whole and then moved into place,
    so concurrent builds never read half a file.
    """
    cmds = [': "${SENTINEL_SPACK_EXTERNALS:?set it in the environment (env_vars): the '
            'Spack environment includes that file}"']
    for env in environs:
        ext = env.extras.get("spack_external") or {}
        if ext.get("prefix_script"):
            cmds.append(f"{shlex.quote(ext['prefix_script'])} {shlex.quote(ext['prefix'])} "
                        ">/dev/null")
    text = shlex.quote(externals_yaml(environs))
    cmds.append(f'printf %s {text} > "$SENTINEL_SPACK_EXTERNALS.$$" && '
                'mv "$SENTINEL_SPACK_EXTERNALS.$$" "$SENTINEL_SPACK_EXTERNALS"')
    return cmds


def install_prefix(setup: SpackSetup, spec: str, env_vars: dict[str, str]) -> str:
    """Where ``spec`` is installed in the environment; an error naming the spec if not."""
    spack = shutil.which("spack", path=env_vars.get("PATH")) or shutil.which("spack")
    if spack is None:
        raise SentinelError("the 'spack' command is not on PATH")
    proc = subprocess.run([spack, "-e", setup.env, "location", "-i", spec],
                          capture_output=True, text=True, env=env_vars, timeout=600)
    if proc.returncode != 0:
        raise SentinelError(f"spec '{spec}' is not installed in Spack environment "
                            f"{setup.env}: {proc.stderr.strip()[-400:]}")
    return proc.stdout.strip().splitlines()[-1]


@dataclass(frozen=True)
class InstalledSpec:
    """What Spack recorded of one install (``<prefix>/.spack/spec.json``)."""

    #: ``name@version %compiler@version /hash`` of the installed package (7 hash characters).
    concrete: str
    #: ``gcc@12.2.0``; None where the spec names none (Spack 1.0 makes
    #: compilers dependencies instead).
    compiler: str | None


def parse_spec_json(text: str, where: str) -> InstalledSpec:
    """The installed package of a Spack ``spec.json`` (the first node is the root)."""
    try:
        root = json.loads(text)["spec"]["nodes"][0]
        name, version, digest = (str(root[k]) for k in ("name", "version", "hash"))
    except (ValueError, KeyError, IndexError, TypeError):
        raise SentinelError(f"{where}: not a Spack spec.json (no spec.nodes[0] with "
                            "name, version and hash)") from None
    comp = root.get("compiler")
    compiler = (f"{comp['name']}@{comp['version']}"
                if isinstance(comp, dict) and {"name", "version"} <= comp.keys() else None)
    concrete = f"{name}@{version}" + (f" %{compiler}" if compiler else "") + f" /{digest[:7]}"
    return InstalledSpec(concrete, compiler)


def installed_spec(prefix: str) -> InstalledSpec:
    """What Spack recorded of the install at ``prefix``; an error naming the file if nothing."""
    path = Path(prefix) / ".spack" / "spec.json"
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        raise SentinelError(f"{path} cannot be read ({err.strerror})") from None
    return parse_spec_json(text, str(path))
