"""Sphinx configuration of the MPI Sentinel documentation (``make docs``).

Sphinx with MyST: the pages are Markdown, as the project's READMEs are, and
the checks' docstrings (reStructuredText, as ReFrame's own) are rendered as
they are; the check pages and the variable reference are generated from the
code at build time (``_ext/sentinel_pages.py``).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "MPI Sentinel"
extensions = ["myst_parser", "sentinel_pages"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
# Options, messages and quotes stay as typed: "--variables" is not an en dash,
# and a quoted error message is the message.
smartquotes = False
html_theme = "alabaster"
html_title = "MPI Sentinel"
