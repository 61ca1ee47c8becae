"""Where the suite works around ReFrame: every patch and re-decision of ReFrame's, in one place.

Each module says what of ReFrame it works around, and why; each targets
ReFrame :data:`REFRAME_SERIES` (``tests/unit/test_compat.py`` fails on another
series, when ReFrame's conversion of a ``-S`` value stops letting a
``ValueError`` through, and when its run report keeps a skip's message;
``tests/unit/test_reframe_fixes.py`` on a patched function whose source
changed):

* :mod:`.cmdline`: the command line, read before ReFrame parses it (the
  configuration and the checks decide while ReFrame loads them); the one
  reader of the process's arguments outside the ``sentinel`` command's entry points.
* :mod:`.reframe_fixes`: ReFrame's per-test and per-test-case costs patched
  away (installed by :func:`install`), each over the ReFrame source it was
  written for, each giving what ReFrame's own function gives.
* :mod:`.selection`: check classes registered only where the session's
  name and tag filters keep a variant (ReFrame instantiates every variant
  before it filters).
* :mod:`.generation` and :mod:`.offered`: the variants a session generates,
  pruned to what the system offers before ReFrame instantiates them.
* :mod:`.setvars`: ``-S`` values converted as ReFrame will, before it
  loads a test (ReFrame stops with a traceback on a ``ValueError`` there).
* :mod:`.skips`: a skip's message kept in the run report (ReFrame's has no
  field for it).
"""

from __future__ import annotations

#: The ReFrame release series these workarounds were written against.
REFRAME_SERIES = "4.10"


def install() -> list[str]:
    """Install the patches of :mod:`.reframe_fixes`, each over its own ReFrame source only.

    Called once, by :mod:`sentinel.rfm.base`; returns the patches installed.
    """
    from sentinel.rfm.compat import reframe_fixes

    return reframe_fixes.install()
