"""Vectorised bookkeeping the SP 800-90B estimators share: equal substrings and running counts.

Owns two things, both exact integer work with numpy:

* :class:`Windows`: for every start position, an integer key that is equal for two positions
  exactly when the length-``m`` substrings there are equal (packed symbols while they fit in
  63 bits, dense ranks of halves by prefix doubling beyond);
* per-key running state of an event stream in time order (:func:`earlier_count`,
  :func:`earlier_max`, :func:`first_event`): what NIST's tool keeps in dictionaries and
  updates one sample at a time, computed by a stable sort on the key instead.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["I64", "Windows", "earlier_count", "earlier_max", "first_event"]

I64 = npt.NDArray[np.int64]


def _sorted_groups(keys: I64) -> tuple[I64, I64, I64]:
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    new = np.empty(ordered.size, dtype=bool)
    new[:1] = True
    new[1:] = ordered[1:] != ordered[:-1]
    group = np.cumsum(new, dtype=np.int64) - 1
    starts = np.flatnonzero(new)
    return order, group, starts


def earlier_count(keys: I64, where: npt.NDArray[np.bool_] | None = None) -> I64:
    """For each event, how many earlier events have the same key (of those ``where`` marks)."""
    order, group, starts = _sorted_groups(keys)
    out = np.empty(keys.size, dtype=np.int64)
    if where is None:
        out[order] = np.arange(keys.size, dtype=np.int64) - starts[group]
        return out
    marked = where[order].astype(np.int64)
    running = np.cumsum(marked) - marked  # marked events before, in key-then-time order
    out[order] = running - running[starts][group]
    return out


def first_event(keys: I64) -> I64:
    """For each event, the index of the first event with the same key."""
    order, group, starts = _sorted_groups(keys)
    out = np.empty(keys.size, dtype=np.int64)
    out[order] = order[starts[group]]
    return out


def earlier_max(keys: I64, values: I64) -> I64:
    """For each event, the largest ``values`` among earlier events with its key (-1: none).

    ``values`` are at least -1 (-1: the event does not count).
    """
    if keys.size == 0:
        return np.empty(0, dtype=np.int64)
    order, group, starts = _sorted_groups(keys)
    shifted = values[order] + 1
    span = int(shifted.max()) + 1
    running = np.maximum.accumulate(shifted + group * span)
    before = np.empty(keys.size, dtype=np.int64)
    before[0] = 0
    before[1:] = running[:-1] - group[1:] * span
    before[starts] = 0
    out = np.empty(keys.size, dtype=np.int64)
    out[order] = before - 1
    return out


class Windows:
    """Keys of the length-``m`` substrings of ``symbols`` (alphabet ``k``), cached per length."""

    def __init__(self, symbols: npt.NDArray[np.uint8], k: int) -> None:
        self.s = symbols.astype(np.int64)
        self.n = int(symbols.size)
        self.k = max(k, 2)
        self._packed_max = 1
        while self.k ** (self._packed_max + 1) < (1 << 62):
            self._packed_max += 1
        self._ranks: dict[int, I64] = {}
        self._keys: dict[int, I64] = {}

    def key(self, m: int) -> I64:
        """Keys for start positions ``0 .. n-m``."""
        if m <= self._packed_max:
            return self._packed(m)
        h = 1 << (m.bit_length() - 1)
        if h == m:
            return self._rank(h)
        low = self._rank(h)
        return low[: self.n - m + 1] * self.n + low[m - h :]

    def _packed(self, m: int) -> I64:
        if m not in self._keys:
            if m == 1:
                self._keys[1] = self.s
            else:
                shorter = self._packed(m - 1)
                self._keys[m] = shorter[:-1] * self.k + self.s[m - 1 :]
        return self._keys[m]

    def forget(self) -> None:
        """Drop the cached keys (they take ``8 n`` bytes per length)."""
        self._keys.clear()
        self._ranks.clear()

    def _rank(self, h: int) -> I64:
        """Dense ranks (0 .. n-1) of the length-``h`` substrings, ``h`` a power of two."""
        if h not in self._ranks:
            if h <= self._packed_max:
                keys = self._packed(h)
            else:
                half = self._rank(h // 2)
                keys = half[: self.n - h + 1] * self.n + half[h // 2 :]
            _, inverse = np.unique(keys, return_inverse=True)
            self._ranks[h] = inverse.astype(np.int64).reshape(-1)
        return self._ranks[h]
