"""Environment names of MPI installations, one rule for the local system and ``sentinel init``.

The first installation of a family is named by the family (``openmpi``):
the name a site's references, history and command lines already use. Another
installation of that family carries its version, major and minor first
(``openmpi-5_0``), the whole version where two share those
(``openmpi-5_0_11``): ReFrame allows letters, digits, ``_`` and ``-`` in a
name. Select one installation with an anchored pattern (``-p 'openmpi$'``):
ReFrame matches ``-p`` at the start of a name, so ``-p openmpi`` selects every
Open MPI.
"""

from __future__ import annotations

import re


def _clean(name: str) -> str:
    return re.sub(r"[^\w-]", "_", name)


def environment_name(family: str, version: str, key: tuple, taken: dict[str, tuple]) -> str:
    """The name of the installation ``key`` of ``family`` at ``version``; records it in ``taken``.

    ``taken`` maps each name given so far to its installation's key; the same
    key asked again gets its name again.
    """
    major_minor = ".".join(version.split(".")[:2])
    for name in (family, f"{family}-{major_minor}", f"{family}-{version}"):
        name = _clean(name)
        if taken.setdefault(name, key) == key:
            return name
    number = 2
    while taken.setdefault(_clean(f"{family}-{version}-{number}"), key) != key:
        number += 1
    return _clean(f"{family}-{version}-{number}")
