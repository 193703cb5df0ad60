"""The tangible markings seen by the compiled exploration engine (:mod:`spn.statespace.compiled`), and
how a landing is looked up among them.

The markings are stored packed, one row of the smallest unsigned type that holds the counts, each
row padded with zeros to a whole number of 64-bit words (:func:`row_width`). A landing is hashed,
compared and copied a word at a time (:func:`words`: the same rows seen as 64-bit words): 12 words
instead of 91 counts for the join of ``benchmarks/models/join.yaml``, where a state is landed on
6.8 times on average. The pending landings are stored the same way, so that a batch of them
(128 KB of rows) stays in the core's cache while it is looked up.

The table of markings is open addressing with linear probing: a slot holds a marking's id + 1
beside a tag (high bits of the hash), so that most slots of other markings are passed over without
reading their rows.

Numba caches each function with its own file: :mod:`spn.kernels` stamps this file with the
kernel's, and compiles the kernel again (its cache cleared) when any of them changes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: the kernel's answers (:mod:`spn.statespace.compiled`), numbered here once: the lookup gives some of them
DONE, CHUNK_ENDED, ROOM_STATES, ROOM_TRANSITIONS, ROOM_TIMED, ROOM_IMPULSES, WIDER, GIVE_UP, TOO_MANY, SPLIT = range(10)
ID_BITS = 40
ID_MASK = (1 << ID_BITS) - 1
#: rows put into a grown table together (their slots fetched in one pass: 16 KB of them)
REHASH_BLOCK = 1 << 11


def row_width(n_places: int, dtype) -> int:
    """Counts per stored row: ``n_places``, padded so that a row is a whole number of 64-bit words."""
    per_word = 8 // np.dtype(dtype).itemsize
    return -(-n_places // per_word) * per_word


def words(rows: np.ndarray) -> np.ndarray:
    """The rows (C-contiguous, :func:`row_width` wide) seen as 64-bit words: a view, to be taken again
    after the rows are resized (which moves them)."""
    return rows.view(np.uint64)


def pending_marks(size: int, n_places: int, dtype) -> np.ndarray:
    """Room for ``size`` pending landings, stored as the rows are (padding zero, never written)."""
    return np.zeros((size, row_width(n_places, dtype)), dtype=dtype)


def _compiled(function):
    return njit(cache=True, nogil=True)(function)


def _inlined(function):
    """Compiled into its callers: these run once or more per landing."""
    return njit(cache=True, nogil=True, inline="always")(function)


@_inlined
def hash_words(w, i):
    """The hash of row i of the words ``w``: each word mixed in, then the bits spread (splitmix64's end)."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for j in range(w.shape[1]):
        h = (h ^ w[i, j]) * np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(29)
    return spread_bits(h)


@_inlined
def spread_bits(h):
    """splitmix64's finalizer: every bit of ``h`` moves every bit of the result (the end of both hashes)."""
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


@_inlined
def slot_of(h, slots):
    """First slot of a hash, and its tag (top bits, with the tag's own top bit set: never 0)."""
    return np.int64(h & np.uint64(len(slots) - 1)), np.int64(h >> np.uint64(41)) | (1 << 22)


@_compiled
def rehash(row_words, n, slots):
    """Put the first n rows (as words) into the empty table ``slots``, a block at a time: the block's
    slots read first, in a short loop of independent reads (as :func:`flush` does), then filled."""
    mask = len(slots) - 1
    pos, tags, first = np.empty(REHASH_BLOCK, np.int64), np.empty(REHASH_BLOCK, np.int64), \
        np.empty(REHASH_BLOCK, np.int64)
    for start in range(0, n, REHASH_BLOCK):
        size = min(REHASH_BLOCK, n - start)
        for i in range(size):
            pos[i], tags[i] = slot_of(hash_words(row_words, start + i), slots)
        for i in range(size):           # (kept, so that the reads stay)
            first[i] = slots[pos[i]]
        for i in range(size):
            at = pos[i]
            while slots[at] != 0:
                at = (at + 1) & mask
            slots[at] = (tags[i] << ID_BITS) | (start + i + 1)


@_inlined
def land(m, source, weight, k, top_count, marks, sources, weights):
    """Put tangible marking m, reached from ``source`` at ``weight``, at position k of the pending
    landings: DONE, or why not (no room left: GIVE_UP; a count too large for the rows: WIDER)."""
    if k >= len(sources):
        return GIVE_UP
    largest = 0
    for j in range(m.shape[0]):     # (no exit from the loop, which is then vectorised)
        largest = max(largest, m[j])
        marks[k, j] = m[j]
    if largest > top_count:         # (the row written is not counted)
        return WIDER
    sources[k], weights[k] = source, weight
    return DONE


@_compiled
def flush(k, rows, row_words, slots, src, dst, rate, counts, pending):
    """Look up (adding new ones) the k pending landings and record them as transitions.

    First every slot, and the row it points to, is read in short loops of
    independent reads (which the processor overlaps); then each landing probes
    from there, finding in cache what it needs.
    Returns a lack of room (before changing anything) or DONE.
    """
    sources, weights, pos, tags, first, mark_words = pending[1], pending[2], pending[3], pending[4], pending[5], \
        pending[6]
    if counts[0] + k >= rows.shape[0] or 2 * (counts[0] + k) >= len(slots):
        counts[6] = counts[0] + k
        return ROOM_STATES
    if counts[2] + k > len(src):
        counts[7] = counts[2] + k
        return ROOM_TRANSITIONS
    mask = len(slots) - 1
    n_words = row_words.shape[1]
    for i in range(k):
        pos[i], tags[i] = slot_of(hash_words(mark_words, i), slots)
    # short loops of independent reads, so that many cache misses are under way at once
    for i in range(k):
        first[i] = slots[pos[i]]
    for i in range(k):              # the candidate rows (their first words kept, so that the reads stay)
        first[i] = np.int64(row_words[max((first[i] & ID_MASK) - 1, 0), 0])
    n_tr = counts[2]
    for i in range(k):
        at = pos[i]
        entry = slots[at]           # read again: an earlier landing of this batch may have taken it
        while True:
            if entry == 0:                          # a new marking
                found = counts[0]
                for j in range(n_words):
                    row_words[found, j] = mark_words[i, j]
                slots[at] = (tags[i] << ID_BITS) | (found + 1)
                counts[0] = found + 1
                break
            if (entry >> ID_BITS) == tags[i]:
                found = (entry & ID_MASK) - 1
                same = True
                for j in range(n_words):
                    if row_words[found, j] != mark_words[i, j]:
                        same = False
                        break
                if same:
                    break
            at = (at + 1) & mask
            entry = slots[at]
        if found != sources[i]:
            src[n_tr], dst[n_tr], rate[n_tr] = sources[i], found, weights[i]
            n_tr += 1
    counts[2] = n_tr
    return DONE
