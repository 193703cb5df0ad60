"""Distinct markings → consecutive ids, with a vectorised open-addressing hash table.

Exploration asks, for a whole batch of markings at once, "which of these have I
seen, and under which id?". A Python dict keyed by row bytes answers one marking
at a time; this table answers a batch with a handful of NumPy operations:

1. pack every row into a few 64-bit words (the token counts side by side, in the
   smallest unsigned type that holds them) and hash the words;
2. probe slot ``hash & mask``: an empty slot means a new marking (one of the rows
   aiming at it claims it), a slot holding an equal row gives the id, anything
   else moves on to the next slot (linear probing) — for all pending rows at once,
   until none is pending.

Markings are stored once, in insertion order, in that packed form (uint8 per place
until a place holds more than 255 tokens, and so on, rows padded to whole words),
so a state costs about ``places`` bytes and two to four 8-byte table slots. A slot
holds the marking's id and the top 23 bits of its hash, so that probing compares
the stored words only when those bits agree.

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

from spn.activity_table import rows_equal

_EMPTY = -1
#: a slot holds the id of a marking (low bits) and the top bits of its hash (a tag)
_ID_BITS = 40
_TAG_BITS = 63 - _ID_BITS
_ID_MASK = (1 << _ID_BITS) - 1
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_UNSIGNED = (np.uint8, np.uint16, np.uint32, np.uint64)


def _word_multipliers(n_words: int) -> np.ndarray:
    rng = np.random.default_rng(0x5EED)            # fixed: the table layout is reproducible
    return rng.integers(1, 2**63, size=n_words, dtype=np.uint64) | np.uint64(1)


class MarkingIndex:
    """Assigns consecutive ids to distinct markings (rows of an integer array)."""

    def __init__(self, n_places: int, capacity: int = 1 << 12):
        self.n_places = n_places
        self._n = 0
        self._slots = np.full(1 << max(4, (2 * capacity - 1).bit_length()), _EMPTY, dtype=np.int64)
        self._set_layout(np.uint8, capacity)

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Memory held by the stored markings, their hashes and the table."""
        return self._rows.nbytes + self._slots.nbytes

    def markings(self) -> np.ndarray:
        """The distinct markings so far, row i having id i (a view: see :meth:`copy_markings`)."""
        return self._rows[:self._n, :self.n_places]

    def copy_markings(self) -> np.ndarray:
        """A copy of :meth:`markings` (rows copied whole, padding included, which is faster)."""
        return self._rows[:self._n].copy()[:, :self.n_places]

    def pack(self, markings: np.ndarray) -> np.ndarray:
        """Rows as (n, words) uint64, in this index's storage layout."""
        packed = np.zeros((len(markings), self._rows.shape[1]), dtype=self._rows.dtype)
        packed[:, :self.n_places] = markings
        return packed.view(np.uint64)

    def hash(self, words: np.ndarray) -> np.ndarray:
        """64-bit hash of every packed row (see :meth:`pack`)."""
        with np.errstate(over="ignore"):
            h = words[:, 0] * self._mult[0]
            for j in range(1, words.shape[1]):
                h = (h << np.uint64(29)) | (h >> np.uint64(35))
                h ^= words[:, j] * self._mult[j]
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
        self._reserve(self._n + len(markings), int(markings.max()))
        words = self.pack(markings)
        # rows repeated within the batch need no special care: one claims a slot,
        # the others find it there one probe later
        ids = self._insert(words, self.hash(words))
        return ids, np.arange(first_new, self._n, dtype=np.int64)

    # ---- internals
    def _set_layout(self, dtype, capacity: int):
        """Storage of ``capacity`` rows of ``dtype`` counts, padded to whole 64-bit words."""
        per_word = 8 // np.dtype(dtype).itemsize
        width = -(-max(self.n_places, 1) // per_word) * per_word
        self._rows = np.zeros((capacity, width), dtype=dtype)
        self._words = self._rows.view(np.uint64)
        self._mult = _word_multipliers(self._words.shape[1])

    def _insert(self, words: np.ndarray, row_h: np.ndarray) -> np.ndarray:
        """Ids of packed rows, inserting the unseen ones."""
        mask = len(self._slots) - 1
        ids = np.full(len(words), _EMPTY, dtype=np.int64)
        pos = (row_h & np.uint64(mask)).astype(np.int64)
        tags = _tag(row_h)
        pending = np.arange(len(words))
        while pending.size:
            at = self._slots[pos[pending]]
            empty = at == _EMPTY
            # occupied slots: the same marking (same tag, then same words)? if not, probe on
            occ = pending[~empty]
            if occ.size:
                held = at[~empty]
                same = (held >> _ID_BITS) == tags[occ]
                cand = held[same] & _ID_MASK
                same[same] = rows_equal(self._words[cand], words[occ[same]])
                ids[occ[same]] = held[same] & _ID_MASK
                moved = occ[~same]
                pos[moved] = (pos[moved] + 1) & mask
            # empty slots: every row aiming at one writes its mark there, the last write
            # wins and claims the slot; the others look at the same slot again (a repeat
            # of the winner then finds its id there)
            free = pending[empty]
            if free.size:
                at_free = pos[free]
                self._slots[at_free] = -2 - free
                claim = free[self._slots[at_free] == -2 - free]
                new_ids = np.arange(self._n, self._n + claim.size, dtype=np.int64)
                self._words[new_ids] = words[claim]
                self._slots[pos[claim]] = (tags[claim] << _ID_BITS) | new_ids
                ids[claim] = new_ids
                self._n += claim.size
            pending = pending[ids[pending] == _EMPTY]
        return ids

    def _reserve(self, n: int, max_tokens: int):
        """Room for n markings whose counts reach max_tokens; keep the table at most half full."""
        dtype = self._rows.dtype
        if max_tokens > np.iinfo(dtype).max:
            dtype = next(t for t in _UNSIGNED if np.iinfo(t).max >= max_tokens)
        if n > len(self._rows) or dtype != self._rows.dtype:
            old = self.markings()
            self._set_layout(dtype, max(n, 2 * len(self._rows)))
            self._rows[:self._n, :self.n_places] = old
            if dtype != old.dtype:                 # a new layout hashes differently
                self._rehash(len(self._slots))
        if 2 * n > len(self._slots):
            size = len(self._slots)
            while 2 * n > size:
                size *= 2
            self._rehash(size)

    def _rehash(self, size: int):
        self._slots = np.full(size, _EMPTY, dtype=np.int64)
        mask = size - 1
        hashes = self.hash(self._words[:self._n])
        entries = (_tag(hashes) << _ID_BITS) | np.arange(self._n, dtype=np.int64)
        pos = (hashes & np.uint64(mask)).astype(np.int64)
        pending = np.arange(self._n)
        while pending.size:
            at = pos[pending]
            free = self._slots[at] == _EMPTY
            cand, at = pending[free], at[free]
            self._slots[at] = entries[cand]             # where several aim at an empty slot,
            won = self._slots[at] == entries[cand]      # the last write wins it
            pending = np.concatenate([pending[~free], cand[~won]])
            pos[pending] = (pos[pending] + 1) & mask


def _tag(hashes: np.ndarray) -> np.ndarray:
    """The top bits of a hash, kept in the slot beside the id to rule out most unequal rows."""
    return (hashes >> np.uint64(64 - _TAG_BITS)).astype(np.int64)
