"""A function mapped over items by forked processes (stored sessions, figures)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from typing import Any


def forked_map(func: Callable[[Any], Any], items: list, workers: int = 0) -> list:
    """``[func(x) for x in items]`` by ``workers`` forked processes (0: one per CPU).

    The workers see this process's memory as it was at the fork (module-level
    inputs need not be pickled); one item at a time, in order. Serial with
    one worker, without ``fork``, and at interpreter exit, where no process
    pool can start (the nightly mode's atexit listing).
    """
    workers = min(workers or os.cpu_count() or 1, len(items))
    if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
        # imported here: importing it registers an exit hook, refused at interpreter exit
        from concurrent.futures import ProcessPoolExecutor

        try:
            with ProcessPoolExecutor(workers,
                                     mp_context=multiprocessing.get_context("fork")) as pool:
                return list(pool.map(func, items))
        except RuntimeError:
            pass
    return [func(x) for x in items]
