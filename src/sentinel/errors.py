"""Exceptions that carry a message meant for a site engineer, not a traceback."""

from reframe.core.exceptions import ReframeError


class SentinelError(ReframeError):
    """A problem in configuration, references or benchmark output.

    The message always names what is wrong and where (a config key, a file
    and line, a benchmark output that is truncated). It derives from
    ReFrame's own error so that ReFrame reports it as a message, not a
    traceback.
    """
