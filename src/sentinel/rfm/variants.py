"""Unique names of check variants, for checks that depend on each other by name."""

from __future__ import annotations

import functools

from sentinel.errors import SentinelError


def variant_name(cls: type, name: str, **params) -> str:
    """The unique name, as registered under ``name``, of ``cls``'s variant with ``params``.

    ``params`` must give every parameter. One pass over the variants per
    class, then a lookup: series that depend on each other by name stay
    linear in the number of variants (``get_variant_nums`` per test is not).
    """
    key = tuple(sorted(params.items()))
    try:
        num = _variants(cls)[key]
    except KeyError:
        raise SentinelError(f"{name} has no variant {dict(key)}") from None
    return cls.variant_name(num).replace(cls.__name__, name, 1)


@functools.cache
def _variants(cls: type) -> dict[tuple, int]:
    out = {}
    for num in range(cls.num_variants):
        params = cls.get_variant_info(num)["params"]
        out.setdefault(tuple(sorted(params.items())), num)
    return out
