"""Distinct markings → consecutive ids, with a vectorised open-addressing hash table.

Exploration asks, for a whole batch of markings at once, "which of these have I
seen, and under which id?". A Python dict keyed by row bytes answers one marking
at a time; this table answers a batch with a handful of NumPy operations:

1. pack every row into a few 64-bit words (the token counts side by side, in the
   smallest unsigned type that holds them) and hash the words;
2. probe slot ``hash & mask``: an empty slot means a new marking (one of the rows
   aiming at it claims it), a slot holding an equal row gives the id, anything
   else moves on by a step drawn from the hash (double hashing) — for all pending
   rows at once, until none is pending.

Markings are stored once, in insertion order, in that packed form (uint8 per place
until a place holds more than 255 tokens, and so on, rows padded to whole words),
so a state costs about ``places`` bytes and four to eight 8-byte table slots. A slot
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

from spn.statespace.activity_table import rows_equal

_EMPTY = 0          # a free slot (tables start as zeros: no fill pass over fresh memory)
_UNKNOWN = -1       # an id not found yet
#: a slot holds id + 1 of a marking (low bits) and the top bits of its hash (a tag, never 0)
_ID_BITS = 40
_TAG_BITS = 63 - _ID_BITS
_ID_MASK = (1 << _ID_BITS) - 1
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_UNSIGNED = (np.uint8, np.uint16, np.uint32, np.uint64)
#: words per row past which rows are hashed as a sum of products (multilinear) in one call
_WIDE = 16


def _word_multipliers(n_words: int) -> np.ndarray:
    rng = np.random.default_rng(0x5EED)            # fixed: the table layout is reproducible
    return rng.integers(1, 2**63, size=n_words, dtype=np.uint64) | np.uint64(1)


class MarkingIndex:
    """Assigns consecutive ids to distinct markings (rows of an integer array)."""

    def __init__(self, n_places: int, capacity: int = 1 << 12):
        self.n_places = n_places
        capacity = max(16, min(capacity, (1 << 24) // max(n_places, 1)))   # (wide rows: start smaller)
        self._n = 0
        self._slots = np.zeros(1 << max(4, (4 * capacity - 1).bit_length()), dtype=np.int64)
        self._set_layout(np.uint8, capacity)

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Memory held by the stored markings, their hashes and the table."""
        return self._rows.nbytes + self._slots.nbytes

    @property
    def row_bytes(self) -> int:
        """Bytes one stored marking takes."""
        return self._rows.itemsize * self._rows.shape[1]

    def markings(self) -> np.ndarray:
        """The distinct markings so far, row i having id i (a view, valid until the next :meth:`add`)."""
        return self._rows[:self._n, :self.n_places]

    def release_markings(self) -> np.ndarray:
        """The markings, handed over without a copy; the index is unusable afterwards."""
        self._words = self._slots = None
        self._rows.resize((self._n, self._rows.shape[1]), refcheck=False)   # trimmed in place
        return self._rows[:, :self.n_places]

    def pack(self, markings: np.ndarray) -> np.ndarray:
        """Rows as (n, words) uint64, in this index's storage layout."""
        packed = np.zeros((len(markings), self._rows.shape[1]), dtype=self._rows.dtype)
        packed[:, :self.n_places] = markings
        return packed.view(np.uint64)

    def hash(self, words: np.ndarray) -> np.ndarray:
        """64-bit hash of every packed row (see :meth:`pack`)."""
        with np.errstate(over="ignore"):
            if words.shape[1] <= _WIDE:
                h = words[:, 0] * self._mult[0]
                for j in range(1, words.shape[1]):
                    h = (h << np.uint64(29)) | (h >> np.uint64(35))
                    h ^= words[:, j] * self._mult[j]
            else:   # wide rows (thousands of places): a fixed number of calls per block of rows
                h = np.empty(len(words), dtype=np.uint64)
                step = max(1, (1 << 20) // words.shape[1])
                for i in range(0, len(words), step):
                    h[i:i + step] = (words[i:i + step] * self._mult).sum(axis=1, dtype=np.uint64)
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
        ids = np.full(len(words), _UNKNOWN, dtype=np.int64)
        rows = np.arange(len(words))
        pos = (row_h & np.uint64(mask)).astype(np.int64)
        step = _step(row_h)
        tags = _tag(row_h)
        while rows.size:
            at = self._slots[pos]
            match = np.flatnonzero((at >> _ID_BITS) == tags)
            if match.size:
                cand = (at[match] & _ID_MASK) - 1
                same = rows_equal(self._words[cand], words[rows[match]])
                ids[rows[match[same]]] = cand[same]
            free = np.flatnonzero(at == _EMPTY)
            if free.size:
                mark = -2 - rows[free]
                self._slots[pos[free]] = mark
                claim = free[self._slots[pos[free]] == mark]
                new_ids = np.arange(self._n, self._n + claim.size, dtype=np.int64)
                self._words[new_ids] = words[rows[claim]]
                self._slots[pos[claim]] = (tags[claim] << _ID_BITS) | (new_ids + 1)
                ids[rows[claim]] = new_ids
                self._n += claim.size
            left = ids[rows] == _UNKNOWN
            moving = left & (at != _EMPTY)      # lost a claim: look at the same slot again
            pos[moving] = (pos[moving] + step[moving]) & mask
            rows, pos, step, tags = rows[left], pos[left], step[left], tags[left]
        return ids

    def _reserve(self, n: int, max_tokens: int):
        """Room for n markings whose counts reach max_tokens; keep the table at most a quarter full."""
        dtype = self._rows.dtype
        if max_tokens > np.iinfo(dtype).max:
            dtype = next(t for t in _UNSIGNED if np.iinfo(t).max >= max_tokens)
        if dtype != self._rows.dtype:              # wider counts: a new layout, which hashes differently
            old = self.markings()
            self._set_layout(dtype, max(n, len(self._rows)))
            self._rows[:self._n, :self.n_places] = old
            self._rehash(len(self._slots))
        elif n > len(self._rows):                  # more rows: grown in place where the allocator can
            self._words = None
            self._rows.resize((max(n, 2 * len(self._rows)), self._rows.shape[1]), refcheck=False)
            self._words = self._rows.view(np.uint64)
        if 4 * n > len(self._slots):
            size = len(self._slots)
            while 4 * n > size:
                size *= 2
            self._rehash(size)

    def _rehash(self, size: int):
        """Rebuild the table with ``size`` slots from the stored markings."""
        self._slots.resize(size, refcheck=False)    # reuses the old table's memory where it can
        self._slots.fill(_EMPTY)
        mask = size - 1
        hashes = self.hash(self._words[:self._n])
        entries = (_tag(hashes) << _ID_BITS) | np.arange(1, self._n + 1, dtype=np.int64)
        pos = (hashes & np.uint64(mask)).astype(np.int64)
        step = _step(hashes)
        pending = np.arange(self._n)
        while pending.size:
            at = pos[pending]
            free = self._slots[at] == _EMPTY
            cand, at = pending[free], at[free]
            self._slots[at] = entries[cand]             # where several aim at an empty slot,
            won = self._slots[at] == entries[cand]      # the last write wins it
            taken = pending[~free]
            pos[taken] = (pos[taken] + step[taken]) & mask
            pending = np.concatenate([taken, cand[~won]])


def _step(hashes: np.ndarray) -> np.ndarray:
    """Probe step (double hashing): odd, so a probe sequence visits every slot."""
    return ((hashes >> np.uint64(32)) | np.uint64(1)).astype(np.int64)


def _tag(hashes: np.ndarray) -> np.ndarray:
    """The top bits of a hash, kept in the slot beside the id to rule out most unequal rows.

    Its own top bit is set, so that no stored entry is 0 (:data:`_EMPTY`).
    """
    return (hashes >> np.uint64(64 - _TAG_BITS)).astype(np.int64) | (1 << (_TAG_BITS - 1))
