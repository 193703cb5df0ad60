"""Distinct markings → consecutive ids, with a vectorised open-addressing hash table.

Exploration asks, for a whole batch of markings at once, "which of these have I
seen, and under which id?". A Python dict keyed by row bytes answers one marking
at a time; this table answers a batch with a handful of NumPy operations:

1. hash every row (multiply-xor over its columns, then a 64-bit mix);
2. probe slot ``hash & mask``: an empty slot means a new marking (the first row of
   the batch aiming at it claims it), a slot holding an equal row gives the id,
   anything else moves on to the next slot (linear probing) — for all pending rows
   at once, until none is pending.

Markings are stored once, in insertion order, in the smallest unsigned integer
type that holds every token count seen so far (uint8 until a place holds more
than 255 tokens, and so on), so a state costs ``places`` bytes plus the table.

>>> import numpy as np
>>> index = MarkingIndex(2)
>>> ids, new = index.add(np.array([[1, 0], [0, 1], [1, 0]]))
>>> bool(ids[0] == ids[2] != ids[1]), new.tolist(), len(index)
(True, [0, 1], 2)
>>> again, new = index.add(np.array([[0, 1], [2, 2]]))
>>> bool(again[0] == ids[1]), new.tolist()
(True, [2])
"""

from __future__ import annotations

import numpy as np

_EMPTY = -1
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _column_multipliers(n_places: int) -> np.ndarray:
    rng = np.random.default_rng(0x5EED)            # fixed: the table layout is reproducible
    return rng.integers(1, 2**63, size=n_places, dtype=np.uint64) | np.uint64(1)


class MarkingIndex:
    """Assigns consecutive ids to distinct markings (rows of an integer array)."""

    def __init__(self, n_places: int, capacity: int = 1 << 12):
        self.n_places = n_places
        self._mult = _column_multipliers(n_places)
        self._rows = np.empty((capacity, n_places), dtype=np.uint8)
        self._hashes = np.empty(capacity, dtype=np.uint64)
        self._n = 0
        self._slots = np.full(1 << max(4, (2 * capacity - 1).bit_length()), _EMPTY, dtype=np.int64)

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Memory held by the stored markings, their hashes and the table."""
        return self._rows.nbytes + self._hashes.nbytes + self._slots.nbytes

    def markings(self) -> np.ndarray:
        """The distinct markings so far, row i having id i (a view: copy it to keep it)."""
        return self._rows[:self._n]

    def hash(self, markings: np.ndarray) -> np.ndarray:
        """64-bit hash of every row."""
        h = np.zeros(len(markings), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for j in range(self.n_places):
                h ^= markings[:, j].astype(np.uint64) * self._mult[j]
                h = (h << np.uint64(7)) | (h >> np.uint64(57))
            h ^= h >> np.uint64(30)
            h *= _MIX1
            h ^= h >> np.uint64(27)
            h *= _MIX2
            h ^= h >> np.uint64(31)
        return h

    def add(self, markings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ids of the rows of ``markings`` (adding unseen ones), and the ids that are new."""
        markings = np.asarray(markings)
        if len(markings) == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        if markings.min() < 0:
            raise ValueError("markings hold non-negative token counts")
        first_new = self._n
        # rows repeated within the batch need no special care: the first claims a slot,
        # the others find it there one probe later
        ids = self._insert(markings, self.hash(markings))
        return ids, np.arange(first_new, self._n, dtype=np.int64)

    # ---- internals
    def _insert(self, rows: np.ndarray, row_h: np.ndarray) -> np.ndarray:
        """Ids of distinct rows, inserting the unseen ones."""
        self._reserve(self._n + len(rows), int(rows.max()))
        mask = np.uint64(len(self._slots) - 1)
        ids = np.full(len(rows), _EMPTY, dtype=np.int64)
        pos = (row_h & mask).astype(np.int64)
        pending = np.arange(len(rows))
        while pending.size:
            at = self._slots[pos[pending]]
            empty = at == _EMPTY
            # occupied slots: the same marking? if not, probe the next slot
            occ = pending[~empty]
            if occ.size:
                cand = at[~empty]
                same = (self._hashes[cand] == row_h[occ]) & np.all(
                    self._rows[cand] == rows[occ], axis=1)
                ids[occ[same]] = cand[same]
                moved = occ[~same]
                pos[moved] = (pos[moved] + 1) & int(mask)
            # empty slots: the first row aiming at each one claims it; the others look
            # at the same slot again (a repeat of the claimant finds its id there)
            free = pending[empty]
            if free.size:
                _, first = np.unique(pos[free], return_index=True)
                claim = free[first]
                new_ids = np.arange(self._n, self._n + claim.size, dtype=np.int64)
                self._rows[new_ids] = rows[claim]
                self._hashes[new_ids] = row_h[claim]
                self._slots[pos[claim]] = new_ids
                ids[claim] = new_ids
                self._n += claim.size
            pending = pending[ids[pending] == _EMPTY]
        return ids

    def _reserve(self, n: int, max_tokens: int):
        """Room for n markings whose counts reach max_tokens; keep the table at most half full."""
        if max_tokens > np.iinfo(self._rows.dtype).max:
            dtype = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64)
                         if np.iinfo(t).max >= max_tokens)
            self._rows = self._rows.astype(dtype)
        if n > len(self._rows):
            size = max(n, 2 * len(self._rows))
            rows = np.empty((size, self.n_places), dtype=self._rows.dtype)
            rows[:self._n] = self._rows[:self._n]
            hashes = np.empty(size, dtype=np.uint64)
            hashes[:self._n] = self._hashes[:self._n]
            self._rows, self._hashes = rows, hashes
        if 2 * n > len(self._slots):
            size = len(self._slots)
            while 2 * n > size:
                size *= 2
            self._rehash(size)

    def _rehash(self, size: int):
        self._slots = np.full(size, _EMPTY, dtype=np.int64)
        mask = size - 1
        pos = (self._hashes[:self._n] & np.uint64(mask)).astype(np.int64)
        pending = np.arange(self._n)
        while pending.size:
            p = pos[pending]
            free = self._slots[p] == _EMPTY
            cand = pending[free]
            _, first = np.unique(p[free], return_index=True)
            claim = cand[first]
            self._slots[pos[claim]] = claim
            placed = np.zeros(self._n, dtype=bool)
            placed[claim] = True
            pending = pending[~placed[pending]]
            pos[pending] = (pos[pending] + 1) & mask
