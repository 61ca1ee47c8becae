"""ReFrame's command line, read before ReFrame parses it: the one reader of ``sys.argv``.

ReFrame (4.10) loads the configuration and the check files before it hands
its parsed options to anything of the suite, and some of its decisions are
taken while they load: the modes' ``-p`` patterns, the variants a check
generates, the log levels, the Slurm options of a pinned job. What the suite
must know of the command line then is read here, and nowhere else outside the
``sentinel`` command's entry points; the configuration files call these
functions and declare what they return.
"""

from __future__ import annotations

import sys
from pathlib import Path


def argv() -> list[str]:
    """The process's command line (``sys.argv``), as ReFrame was given it."""
    return list(sys.argv)


def run_by_reframe() -> bool:
    """Whether this process is ReFrame's command (not a test, not a ``sentinel`` command)."""
    return Path(sys.argv[0]).name == "reframe"


def option_values(args: list[str], short: str | None, long: str) -> list[str]:
    """Every value of an option, in order: ``-S V``, ``-SV``, ``--setvar V``, ``--setvar=V``."""
    found = []
    for i, arg in enumerate(args):
        if arg in (short, long) and i + 1 < len(args):
            found.append(args[i + 1])
        elif arg.startswith(f"{long}="):
            found.append(arg.split("=", 1)[1])
        elif short and arg.startswith(short) and len(arg) > len(short) \
                and not arg.startswith("--"):
            found.append(arg[len(short):])
    return found


def given(short: str | None, long: str) -> list[str]:
    """Every value the command line gives an option (:func:`option_values` of :func:`argv`)."""
    return option_values(sys.argv, short, long)


def has_option(*names: str) -> bool:
    """Whether the command line holds one of the options ``names`` (``--opt`` or ``--opt=V``)."""
    return any(a == name or a.startswith(f"{name}=") for a in sys.argv[1:] for name in names)


def setvar_values(mode_options: list[str], name: str) -> list[str]:
    """The values ``-S`` gives check variable ``name`` (``name=V`` or ``Check.name=V``).

    In ReFrame's order: the selected mode's options, then the command line.
    """
    values = []
    for setting in (*option_values(mode_options, "-S", "--setvar"), *given("-S", "--setvar")):
        key, sep, value = setting.partition("=")
        if sep and key.rsplit(".", 1)[-1] == name:
            values.append(value)
    return values


def mode() -> str | None:
    """The ``--mode`` the command line selects (the last one given), None without one."""
    modes = given(None, "--mode")
    return modes[-1] if modes else None


def listing() -> bool:
    """Whether ReFrame is asked for a listing (``-l``, ``-L``, ``--list...``)."""
    return any(a in ("-l", "-L") or a.startswith("--list") for a in sys.argv[1:])


def writes_nothing() -> bool:
    """Whether ReFrame is asked for a listing or a dry-run: nothing runs, nothing to diagnose."""
    return listing() or has_option("--dry-run")


def verbosity() -> int:
    """How many steps of ``-v`` (``-vv``, ``--verbose``) the command line asks for."""
    steps = sum(a.count("v") for a in sys.argv[1:] if a.startswith("-v") and set(a[1:]) == {"v"})
    return steps + sys.argv[1:].count("--verbose")


def pins_jobs_to_nodes(args: list[str] | None = None) -> bool:
    """Whether the command line (``args``, else this process's) pins jobs to nodes.

    ``--distribute`` or the vet mode: such a job waits while its node
    finishes another, and Slurm gives the reason ReqNodeNotAvail, which
    ReFrame otherwise takes for a node gone.
    """
    args = sys.argv if args is None else args
    return (any(a == "--distribute" or a.startswith("--distribute=") for a in args)
            or "vet" in option_values(args, None, "--mode"))
