"""What a result depends on, read from the texts a job and a build leave behind.

The job gathers the facts that must come from the compute node into one
small file (:func:`gather_command` writes it; :func:`parse_facts` reads it):
the kernel, the node's name, its CPU model and the UCX and libfabric
versions of the tools on ``PATH``. Each fact is a section::

    @@ kernel
    6.1.0-18-amd64
    @@ kernel exit 0

The libraries' own logs (enabled by the transport probes) name the version
they really loaded (:func:`logged_versions`): UCX's ``Version 1.13.1
(loaded from ...)``, Intel MPI's ``libfabric version: 2.4.0-impi``; those
win over the tools on ``PATH``, which may belong to another installation.
A fact that cannot be read is ``not found (<why>)``, never a guess.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

#: The value of a fact that could not be read starts with this.
NOT_FOUND = "not found"

#: The facts the job gathers: name and the shell command that prints it.
FACTS: Mapping[str, str] = {
    "kernel": "uname -r",
    "node": "uname -n",
    # x86 names its model in /proc/cpuinfo; elsewhere lscpu does.
    "cpu": "grep -m1 '^model name' /proc/cpuinfo || lscpu",
    "ucx": "command -v ucx_info && ucx_info -v",
    "libfabric": "command -v fi_info && fi_info --version",
}

#: The tool each version fact comes from (named when it is missing or fails).
_TOOLS = {"ucx": "ucx_info -v", "libfabric": "fi_info --version"}

_SECTION = re.compile(r"^@@ (\w+)$")
_SECTION_END = re.compile(r"^@@ (\w+) exit (\d+)$")
_CPU = re.compile(r"^\s*model name\s*:\s*(.+?)\s*$", re.I | re.M)
# UCX 1.13 prints "# Version 1.13.1"; later ones "# Library version: 1.15.0";
# old ones "# UCT version=1.8.0 revision ...".
_UCX_TOOL = re.compile(r"^#\s*(?:Library\s+)?version[:=]?\s*(\d[\w.+-]*)"
                       r"|^#\s*UC[TP] version=(\d[\w.+-]*)", re.I | re.M)
_FABRIC_TOOL = re.compile(r"^libfabric:\s*(\d[\w.+-]*)\s*$", re.M)
_UCX_LOG = re.compile(r"UCX\s+INFO\s+Version (\d[\w.+-]*)")
_FABRIC_LOG = re.compile(r"libfabric version:\s*(\d[\w.+-]*)")
_LIBRARY = re.compile(r"^SENTINEL_LIBRARY version=(\S+)\s*$", re.M)


def not_found(why: str) -> str:
    """The value of a fact that could not be read: ``not found (<why>)``."""
    return f"{NOT_FOUND} ({why})"


def gather_command(path: str) -> str:
    """One job-script line writing every fact of :data:`FACTS` to ``path``.

    Fast (a few forks, nothing probed, no network) and never failing the job.
    """
    parts = [f"echo '@@ {name}'; ( {cmd} ) 2>&1; echo \"@@ {name} exit $?\""
             for name, cmd in FACTS.items()]
    return "{ " + "; ".join(parts) + "; } > " + shlex.quote(path) + " 2>&1 || true"


def _sections(text: str) -> dict[str, tuple[list[str], int | None]]:
    """Each section's lines and its exit status (None: the section was cut short)."""
    out: dict[str, tuple[list[str], int | None]] = {}
    name: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        end = _SECTION_END.match(line)
        if end and end.group(1) == name:
            out[name] = (lines, int(end.group(2)))
            name = None
            continue
        start = _SECTION.match(line)
        if start:
            if name is not None:
                out[name] = (lines, None)
            name, lines = start.group(1), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        out[name] = (lines, None)
    return out


def _last_line(lines: list[str]) -> str:
    text = [line.strip() for line in lines if line.strip()]
    return text[-1][:160] if text else "no output"


def _plain(name: str, lines: list[str], status: int | None) -> str:
    """``kernel`` and ``node``: the command's one line of output."""
    text = [line.strip() for line in lines if line.strip()]
    if status != 0 or len(text) != 1:
        return not_found(f"{FACTS[name]}: {_failure(lines, status)}")
    return text[0]


def _failure(lines: list[str], status: int | None) -> str:
    """Why a section gave no value: cut short, a failed command, or output unlike a value."""
    if status is None:
        return "cut short"
    if status:
        return f"exit status {status}: {_last_line(lines)}"
    return f"unexpected output: {_last_line(lines)}"


def _cpu(lines: list[str], status: int | None) -> str:
    if status is None:  # its last line may be half a line
        return not_found(f"{FACTS['cpu']}: cut short")
    m = _CPU.search("\n".join(lines))
    return m.group(1) if m else not_found(f"no model name in /proc/cpuinfo or lscpu "
                                           f"({_failure(lines, status)})")


def _tool_version(name: str, lines: list[str], status: int | None) -> str:
    """The version a tool on ``PATH`` printed; ``command -v`` printed its path first."""
    program, option = _TOOLS[name].split(" ", 1)
    if not lines and status:  # command -v found nothing
        return not_found(f"{program} is not on PATH")
    pattern = _UCX_TOOL if name == "ucx" else _FABRIC_TOOL
    m = pattern.search("\n".join(lines))
    if status == 0 and m:
        return next(g for g in m.groups() if g)
    where = lines[0].strip() if lines and lines[0].startswith("/") else program
    return not_found(f"{where} {option}: {_failure(lines[1:], status)}")


def parse_facts(text: str) -> dict[str, str]:
    """Every fact of :data:`FACTS` from the file :func:`gather_command` wrote.

    A fact whose section is missing, failed or printed something else is
    ``not found (<why>)``.
    """
    sections = _sections(text)
    out = {}
    for name in FACTS:
        if name not in sections:
            out[name] = not_found(f"no '@@ {name}' section in the gathered facts")
            continue
        lines, status = sections[name]
        if name == "cpu":
            out[name] = _cpu(lines, status)
        elif name in _TOOLS:
            out[name] = _tool_version(name, lines, status)
        else:
            out[name] = _plain(name, lines, status)
    return out


def logged_versions(job_output: str) -> dict[str, str]:
    """The UCX and libfabric versions the libraries logged they loaded (where they did)."""
    out = {}
    for name, pattern in (("ucx", _UCX_LOG), ("libfabric", _FABRIC_LOG)):
        found = sorted(set(pattern.findall(job_output)))
        if found:
            out[name] = ", ".join(found)  # two versions in one job: both, not one of them
    return out


def library_version(stdout: str) -> str:
    """The MPI library's version string from the benchmark's ``SENTINEL_LIBRARY`` line.

    The benchmark prints ``MPI_Get_library_version``'s first line with blanks
    as underscores; they are turned back.
    """
    m = _LIBRARY.search(stdout)
    if not m:
        return not_found("no SENTINEL_LIBRARY line in the benchmark's output")
    return m.group(1).replace("_", " ")


def compiler_version(text: str, compiler: str) -> str:
    """``<compiler>: <first line of its --version>``, from what the build wrote."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    status = next((int(m.group(1)) for line in lines
                   if (m := re.fullmatch(r"@@ exit (\d+)", line))), None)
    lines = [line for line in lines if not line.startswith("@@ ")]
    if status != 0 or not lines:
        return not_found(f"{compiler} --version: {_failure(lines, status)}")
    return f"{compiler}: {lines[0][:160]}"


def compiler_command(compiler: str, path: str) -> str:
    """One build-script line writing ``compiler --version`` and its exit status to ``path``."""
    cc = shlex.quote(compiler)
    return (f"{{ {cc} --version 2>&1; echo \"@@ exit $?\"; }} > {shlex.quote(path)} "
            "2>&1 || true")
