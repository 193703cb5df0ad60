"""The vectorised marking index agrees with a plain dictionary, whatever the batches."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spn.statespace.marking_index import MarkingIndex


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5).flatmap(lambda p: st.lists(
    st.lists(st.lists(st.integers(0, 300), min_size=p, max_size=p), min_size=0, max_size=40),
    min_size=1, max_size=8)))
def test_ids_match_a_dictionary_of_first_appearances(batches):
    p = len(next((b[0] for b in batches if b), [0]))
    index = MarkingIndex(p, capacity=2)            # tiny: forces growth and rehashing
    reference = {}
    for batch in batches:
        rows = np.array(batch, dtype=np.int32).reshape(-1, p)
        ids, new = index.add(rows)
        before = len(reference)
        for row, i in zip(map(tuple, rows), ids):
            reference.setdefault(row, int(i))
            assert reference[row] == i                      # same marking, same id
        assert len(index) == len(reference)
        assert sorted(new.tolist()) == list(range(before, len(reference)))
    stored = index.markings()
    for row, i in reference.items():
        assert tuple(int(x) for x in stored[i]) == row      # id i holds its marking


def test_storage_widens_only_when_counts_need_it():
    index = MarkingIndex(2)
    index.add(np.array([[1, 2]]))
    assert index.markings().dtype == np.uint8
    index.add(np.array([[300, 0]]))
    assert index.markings().dtype == np.uint16
    assert index.markings().tolist() == [[1, 2], [300, 0]]


def test_a_million_markings_in_batches():
    rng = np.random.default_rng(1)
    index = MarkingIndex(6)
    rows = rng.integers(0, 12, size=(1_000_000, 6))
    ids, _ = index.add(rows)
    distinct = np.unique(rows, axis=0)
    assert len(index) == len(distinct)
    again, new = index.add(rows[::-1])
    assert new.size == 0 and (again == ids[::-1]).all()
