"""What the configuration reads off the reframe command line."""

from __future__ import annotations

import pytest

from sentinel.rfm.compat.cmdline import pins_jobs_to_nodes


@pytest.mark.parametrize(("argv", "pinned"), [
    (["reframe", "--mode", "vet", "-r"], True),
    (["reframe", "--mode=vet", "-r"], True),
    (["reframe", "--distribute", "-r"], True),
    (["reframe", "--distribute=all", "-r"], True),
    (["reframe", "--mode", "nightly", "-r"], False),
    (["reframe", "-n", "vet", "-r"], False),  # a test name, not the mode
])
def test_jobs_are_pinned_to_nodes_by_distribute_or_the_vet_mode(argv, pinned):
    assert pins_jobs_to_nodes(argv) is pinned
