"""Ernest: a non-negative linear model of execution time in the input size and the machine count.

After "Ernest: efficient performance prediction for large-scale advanced
analytics" (NSDI 2016), as the paper "PERIDOT: quick predictions from two
small reference runs" uses it (its equation 5): with ``D`` the input size and
``n`` the cores (Ernest's *machines*),

    T = theta_0 + theta_1 * D / n + theta_2 * log(n) + theta_3 * n,    theta >= 0,

fitted by non-negative least squares (``scipy.optimize.nnls``) to the
reference runs. With fewer than four distinct ``(D, n)`` the fit is not
unique; NNLS still returns one of its solutions, which is how PERIDOT's
authors test Ernest on two references.

>>> import numpy as np
>>> D, n = np.array([1.0, 2.0, 2.0, 4.0, 8.0]), np.array([1, 1, 2, 4, 8])
>>> T = 3 + 10 * D / n + 0.5 * n          # theta = (3, 10, 0, 0.5)
>>> theta = fit_ernest(D, n, T)
>>> np.round(theta, 6).tolist()
[3.0, 10.0, 0.0, 0.5]
>>> round(predict_ernest(theta, 16.0, 4), 6)    # 3 + 10 * 4 + 0.5 * 4
45.0
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from spn.exceptions import ModelError

__all__ = ["ernest_features", "fit_ernest", "predict_ernest"]


def ernest_features(input_size, cores) -> np.ndarray:
    """The design matrix: one row ``[1, D/n, log n, n]`` per run."""
    d = np.atleast_1d(np.asarray(input_size, dtype=float))
    n = np.atleast_1d(np.asarray(cores, dtype=float))
    if np.any(n < 1):
        raise ModelError("cores must be >= 1")
    return np.column_stack([np.ones_like(d), d / n, np.log(n), n])


def fit_ernest(input_size, cores, seconds) -> np.ndarray:
    """The coefficients ``theta`` (all >= 0) from measured runs (arrays of D, n and T).

    The columns are scaled to a largest entry of 1 before NNLS (input sizes in
    bytes are ~1e9 times the other features) and the coefficients scaled back.
    """
    X = ernest_features(input_size, cores)
    y = np.asarray(seconds, dtype=float)
    if len(y) == 0 or len(y) != len(X):
        raise ModelError(f"Ernest needs one time per run: {len(X)} runs, {len(y)} times")
    if len({tuple(row) for row in X.tolist()}) < 2:
        # one configuration (repeated or not) fits theta = (T, 0, 0, 0): the pilot's time for every target
        raise ModelError("Ernest needs runs at two configurations (input size or cores) or more: its four "
                         "coefficients say nothing from one")
    scale = np.abs(X).max(axis=0)
    scale[scale == 0] = 1.0
    theta, _ = scipy.optimize.nnls(X / scale, y)
    return theta / scale


def predict_ernest(theta, input_size: float, cores: int) -> float:
    """Predicted execution time (s) for input ``input_size`` (same unit as the fit) on ``cores`` cores."""
    return float(ernest_features(input_size, cores)[0] @ np.asarray(theta, dtype=float))
