"""Data sizes: parse ``"64MB"``/``"1.5 GiB"`` into bytes, and print bytes short.

>>> parse_size("64MB"), format_size(64e6)
(64000000, '64 MB')
"""

from __future__ import annotations

import math
import re

from spn.exceptions import ModelError

__all__ = ["parse_size", "format_size"]

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


def parse_size(text) -> int:
    """An input size in bytes from ``"123"``, ``"64MB"``, ``"1.5 GiB"``, ``"10gb"``.

    KB/MB/GB/TB (and K/M/G/T) are powers of 1000; KiB/MiB/GiB/TiB powers of 1024.
    Raises :class:`~spn.exceptions.ModelError` on anything else, or on a size <= 0.

    >>> parse_size("64MB"), parse_size("1 KiB"), parse_size(2048)
    (64000000, 1024, 2048)
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
        if not match or match.group(2).lower() not in _UNITS:
            raise ModelError(
                f"input size {text!r}: expected a number of bytes, optionally with a unit "
                "(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 10GB"
            )
        value, unit = float(match.group(1)), match.group(2).lower()
    size = value * _UNITS[unit]
    if not math.isfinite(size):
        raise ModelError(f"input size {text!r}: expected a finite size")
    if round(size) < 1:        # 0.0001B would be fitted as an input of 0 bytes
        raise ModelError(f"input size {text!r}: expected at least 1 byte")
    return int(round(size))


def format_size(size: float) -> str:
    """Bytes as a short decimal string.

    >>> format_size(64e6), format_size(1234), format_size(12)
    ('64 MB', '1.23 kB', '12 B')
    """
    for unit, factor in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size:.0f} B"
