"""Which nights a test case runs: the weekly rotation and the nightly budget's deferral."""

from __future__ import annotations

import time
import zlib

import reframe as rfm
from reframe.core.builtins import run_after, variable

from sentinel.rfm import deferral


class NightlyRotation(rfm.RegressionTestPlugin):
    """A rotating check runs each variant on one night in :attr:`rotation`; any may be deferred."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("night_name",)

    #: Nights over which a rotating check (:attr:`rotates`) shares out its
    #: variants: each variant runs on one night in ``rotation`` (the nightly
    #: mode sets 7, so every variant runs within a week); 1 runs them all.
    #:
    #: :type: :class:`int`
    #: :default: ``1``
    rotation = variable(int, value=1, loggable=True)

    #: Tonight's number, which picks the variants of the rotation (default:
    #: days since 1970-01-01, UTC).
    #:
    #: :type: :class:`int`
    night = variable(int, value=int(time.time() // 86400))

    #: Whether the nightly budget may leave this test case for a later night
    #: (``sentinel plan --mode nightly --defer FILE``); default: the rotating
    #: checks may (:attr:`rotates`), the others run every night.
    #:
    #: :type: :class:`bool` or ``None``
    #: :default: ``None`` (:attr:`rotates`)
    may_defer = variable(bool, type(None), value=None, loggable=True)

    #: The test cases deferred tonight, as ``sentinel plan --defer`` wrote
    #: them (:mod:`sentinel.rfm.deferral`); each skips, saying so.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (none deferred)
    deferred_file = variable(str, value="")

    #: Whether this check rotates in the nightly mode (the expensive sweeps:
    #: threads, Jacobi series, hybrid modes, OSU and IMB) or runs every night
    #: (point-to-point and matching on every transport and mapping).
    rotates: bool = False

    @run_after("init")
    def take_turn(self) -> None:
        """In a rotation, run only on this variant's night (a stable hash of its name)."""
        if not self.rotates or self.rotation <= 1:
            return
        turn = zlib.crc32(self.night_name().encode()) % self.rotation
        tonight = self.night % self.rotation
        self.skip_if(turn != tonight, f"rotation of {self.rotation} nights: runs on night "
                                      f"{turn}, tonight is night {tonight}")

    @run_after("init")
    def default_deferrable(self) -> None:
        """Unless set, a test case is deferrable when its check rotates."""
        if self.may_defer is None:
            self.may_defer = self.rotates

    @run_after("setup")
    def wait_if_deferred(self) -> None:
        """Skip a test case that tonight's budget left for a later night."""
        if not self.deferred_file:
            return
        where = self.current_partition.fullname
        self.skip_if(deferral.deferred(self.deferred_file, where, self.display_name,
                                       self.current_environ.name),
                     f"deferred to a later night by the nightly budget of {where} "
                     f"({self.deferred_file}; sentinel plan --defer)")
