"""Options of ReFrame's command line, read before ReFrame parses it (at configuration load)."""

from __future__ import annotations


def option_values(argv: list[str], short: str | None, long: str) -> list[str]:
    """Every value of an option, in order: ``-S V``, ``-SV``, ``--setvar V``, ``--setvar=V``."""
    found = []
    for i, arg in enumerate(argv):
        if arg in (short, long) and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith(f"{long}="):
            found.append(arg.split("=", 1)[1])
        elif short and arg.startswith(short) and len(arg) > len(short) \
                and not arg.startswith("--"):
            found.append(arg[len(short):])
    return found


def setvar_values(argv: list[str], mode_options: list[str], name: str) -> list[str]:
    """The values ``-S`` gives check variable ``name`` (``name=V`` or ``Check.name=V``).

    In ReFrame's order: the selected mode's options, then the command line.
    """
    values = []
    for given in (*option_values(mode_options, "-S", "--setvar"),
                  *option_values(argv, "-S", "--setvar")):
        key, sep, value = given.partition("=")
        if sep and key.rsplit(".", 1)[-1] == name:
            values.append(value)
    return values


def pins_jobs_to_nodes(argv: list[str]) -> bool:
    """Whether the command line pins jobs to nodes (``--distribute``, the vet mode).

    Such a job waits while its node finishes another, and Slurm gives the
    reason ReqNodeNotAvail, which ReFrame otherwise takes for a node gone.
    """
    return (any(a == "--distribute" or a.startswith("--distribute=") for a in argv)
            or "vet" in option_values(argv, None, "--mode"))
