"""What the compiled engine builds faster is equal to the last bit to what it replaces: the
generator built in one compiled pass (:mod:`spn.statespace.compiled_generator`) to SciPy's, and the
share of markings failing each arc test counted by value (:func:`kernel_arrays.failing_tests`) to
a test per marking."""

from pathlib import Path

import numpy as np
import pytest

from spn.ctmc import generator_matrix
from spn.description import load_description
from spn.models.jobs import application_net
from spn.statespace import explore, kernel_arrays
from spn.statespace.compiled_generator import STABLE_ROW, generator

pytestmark = pytest.mark.compiled      # run last: the kernels compiled beside the first tests are ready

ROOT = Path(__file__).resolve().parents[1]


def same_matrix(a, b):
    return (a.shape == b.shape and a.indptr.dtype == b.indptr.dtype and a.indices.dtype == b.indices.dtype
            and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            and a.data.tobytes() == b.data.tobytes())


@pytest.mark.parametrize("seed", range(4))
def test_generator_equal_to_scipy_to_the_last_bit(seed):
    rng = np.random.default_rng(seed)
    built = 0
    for _ in range(300):
        n = int(rng.integers(1, 40))
        src = np.repeat(np.arange(n), rng.integers(0, STABLE_ROW + 2, n)).astype(np.int32)
        dst = rng.integers(0, max(1, n // int(rng.integers(1, 6))), len(src)).astype(np.int32)  # many repeats
        keep = src != dst
        src, dst = src[keep], dst[keep]
        rate = rng.random(len(src)) * 10.0 ** rng.integers(-6, 6, len(src))
        q = generator(n, src, dst, rate)
        if q is not None:           # (None: a row too long to promise SciPy's order)
            built += 1
            assert same_matrix(q, generator_matrix(n, src, dst, rate))
    assert built > 50


def test_generator_declines_what_it_cannot_promise():
    rate = np.ones(3)
    assert generator(3, np.array([1, 0, 2]), np.array([0, 1, 0]), rate) is None      # sources out of order
    assert generator(3, np.array([0, 1, 1]), np.array([1, 1, 0]), rate) is None      # a self loop
    src = np.zeros(STABLE_ROW + 1, np.int32)
    assert generator(2, src, src + 1, np.ones(len(src))) is None                     # a row too long


def test_explored_chain_generator_equal_to_scipy():
    desc = load_description(ROOT / "models/mapreduce.yaml", ["workload.users=3", "cluster.containers=3",
                                                              "scheduler.policy=fifo"])
    ss = explore(application_net(desc).net, engine="compiled")
    q = generator(ss.n_states, ss.src, ss.dst, ss.rate)
    assert q is not None and same_matrix(q, generator_matrix(ss.n_states, ss.src, ss.dst, ss.rate))
    assert same_matrix(ss.generator(), q)


def test_failing_tests_counted_by_value_as_tested_one_by_one():
    rng = np.random.default_rng(3)
    for trial in range(500):
        places, tests, n, top = (int(rng.integers(1, 30)), int(rng.integers(1, 60)), int(rng.integers(1, 300)),
                                 int(rng.integers(1, 300)))
        markings = rng.integers(0, top, (n, places)).astype((np.uint8, np.uint16)[trial % 2])
        column, threshold = rng.integers(0, places, tests), rng.integers(-top - 3, top + 3, tests)
        values = markings[:, column].astype(np.int64)
        one_by_one = np.where(threshold > 0, values < threshold, values >= -threshold).mean(axis=0)
        assert kernel_arrays.failing_tests((None, column, threshold), markings).tobytes() == one_by_one.tobytes()
