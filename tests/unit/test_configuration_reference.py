"""docs/configuration.md documents every configuration key and variable the code reads.

The code is scanned, not listed here: every ``extras`` key that ``src/``,
``config/`` or ``checks/`` reads or writes, every ``SENTINEL_*`` environment
variable that ``src/``, ``config/``, ``scripts/`` or the ``Makefile`` reads
(or sets for a job), and every feature a check selects on. A key the page
lacks fails, named; so does a key the page documents that the code no
longer has.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from sentinel.mpi.transports import FAMILIES
from sentinel.rfm.gpu_aware import GPU_RUNTIMES
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "configuration.md"


def _files(*where: str, suffixes: tuple[str, ...] = (".py",), makefiles: bool = False
           ) -> list[Path]:
    """The files of these paths (of the checkout) with these suffixes (and Makefiles)."""
    out = []
    for name in where:
        path = ROOT / name
        if path.is_file():
            out.append(path)
            continue
        out += [f for f in sorted(path.rglob("*")) if f.is_file()
                and not any(part.endswith(".egg-info") for part in f.parts)
                and (f.suffix in suffixes or (makefiles and f.name == "Makefile"))]
    return out


#: ``extras.get("key"``, ``extras["key"]``, ``extras['key']``, ``["extras"]["key"]``
#: (code and docstrings alike: a docstring that names a key documents a use of it).
EXTRAS_READ = re.compile(r"""extras["']?\]?(?:\.get\(\s*|\[\s*)["'](\w+)["']""")


def extras_keys() -> dict[str, set[str]]:
    """Every ``extras`` key the code reads or a configuration writes, with where."""
    keys: dict[str, set[str]] = {}

    def found(key: str, path: Path) -> None:
        keys.setdefault(key, set()).add(str(path.relative_to(ROOT)))

    for path in _files("src", "config", "checks"):
        text = path.read_text()
        for m in EXTRAS_READ.finditer(text):
            found(m.group(1), path)
        for node in ast.walk(ast.parse(text)):
            literals = []
            if isinstance(node, ast.Dict):  # {"extras": {"key": ...}}
                literals += [v for k, v in zip(node.keys, node.values)
                             if isinstance(k, ast.Constant) and k.value == "extras"
                             and isinstance(v, ast.Dict)]
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                    isinstance(t, ast.Name) and t.id == "extras" for t in node.targets):
                literals.append(node.value)  # extras = {"key": ...}
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "update" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "extras"):  # extras.update(..., key=...)
                for kw in node.keywords:
                    if kw.arg:
                        found(kw.arg, path)
            for literal in literals:
                for k in literal.keys:
                    if isinstance(k, ast.Constant) and isinstance(k.value, str):
                        found(k.value, path)
    return keys


#: Reading a variable (Python, C, shell and make), or setting it for a job or
#: a child process (``["SENTINEL_X", value]`` in ``env_vars``, ``{"SENTINEL_X": ...}``).
ENV_PATTERNS = [re.compile(p) for p in (
    r"""environ(?:\.get\(|\[)\s*f?["'](SENTINEL_\w+)""",
    r"""getenv\(\s*"(SENTINEL_\w+)""",
    r"""\$[{(]?(SENTINEL_\w+)""",
    r"""\[\s*["'](SENTINEL_\w+)["']\s*,""",
    r"""["'](SENTINEL_\w+)["']\s*:""",
)]


def environment_variables() -> dict[str, set[str]]:
    """Every ``SENTINEL_*`` variable read (or set for a job); a name ending in ``_`` is a prefix."""
    out: dict[str, set[str]] = {}
    for path in _files("src", "config", "scripts", "Makefile",
                       suffixes=(".py", ".c", ".h", ".sh"), makefiles=True):
        text = path.read_text()
        for pattern in ENV_PATTERNS:
            for m in pattern.finditer(text):
                out.setdefault(m.group(1), set()).add(str(path.relative_to(ROOT)))
    return out


#: ``valid_systems = ["+mpi +gpu"]``, ``environ_features = "-spack"``, ...
SELECTION = re.compile(r"(?:valid_systems|valid_prog_environs|environ_features)"
                       r"\s*(?::\s*\w+\s*)?=\s*([^\n]+)")


def selected_features() -> dict[str, set[str]]:
    """Every feature a check selects on, or the code looks for in an environment's."""
    out: dict[str, set[str]] = {}
    for path in _files("src", "checks", "config"):
        text = path.read_text()
        names = [t for m in SELECTION.finditer(text)
                 for t in re.findall(r"[+-]([a-z][\w-]*)", m.group(1))]
        names += re.findall(r"""["'](\w+)["']\s+in\s+[\w.]*features\b""", text)
        for name in names:
            out.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    for name in (*FAMILIES, *GPU_RUNTIMES):
        out.setdefault(name, set()).add("sentinel.mpi.transports / sentinel.rfm.gpu_aware")
    return out


def sections() -> dict[str, tuple[set[str], set[str]]]:
    """Per ``##`` section of the page: the code names of its rows' first cells, and all."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    title = ""
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            out[title] = (set(), set())
        elif title:
            first, anywhere = out[title]
            anywhere.update(re.findall(r"`([^`]+)`", line))
            if line.startswith("| "):
                first.update(re.findall(r"`([^`]+)`", line.split(" | ")[0]))
    return out


def _where(found: dict[str, set[str]], names) -> str:
    return "; ".join(f"{n} (in {', '.join(sorted(found[n]))})" for n in sorted(names))


def _assert_documented(found: dict[str, set[str]], documented: set[str], stale: bool) -> None:
    """Every name ``found`` in the code is on the page; with ``stale``, nothing else is."""
    missing = set(found) - documented
    assert not missing, f"docs/configuration.md does not document: {_where(found, missing)}"
    extra = documented - set(found) if stale else set()
    assert not extra, f"docs/configuration.md documents what no code reads: {sorted(extra)}"


def test_the_scans_find_what_the_suite_is_known_to_read():
    assert {"num_nodes", "nightly_budget", "launcher_options", "benchmark_dirs",
            "spack_env"} <= set(extras_keys())
    assert {"SENTINEL_OUTPUT", "SENTINEL_RESULTS_DB", "SENTINEL_FINALIZE_TIMEOUT",
            "SENTINEL_CUDA_HOME", "SENTINEL_SLURM"} <= set(environment_variables())
    assert {"mpi", "gpu", "spack", "openmpi", "cuda"} <= set(selected_features())


def test_every_extras_key_is_documented():
    page = sections()
    _assert_documented(extras_keys(),
                       page["Partition extras"][0] | page["Environment extras"][0], stale=True)


def test_every_environment_variable_is_documented():
    documented = sections()["Environment variables"][0]
    found = environment_variables()
    missing = {name for name in found if not any(
        d == name or (name.endswith("_") and d.startswith(name)) for d in documented)}
    assert not missing, f"docs/configuration.md does not document: {_where(found, missing)}"
    stale = {d for d in documented if d not in found
             and not any(n.endswith("_") and d.startswith(n) for n in found)}
    assert not stale, f"docs/configuration.md documents variables no code reads: {sorted(stale)}"


def test_every_feature_the_checks_select_on_is_documented():
    page = sections()
    _assert_documented(selected_features(),
                       page["Environment features"][1] | page["Partition keys"][1], stale=False)
