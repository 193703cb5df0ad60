"""Solvers for the CTMC of a net: steady state (direct, GTH, Krylov + ILU, power, SOR) and passage times.

>>> import scipy.sparse as sp
>>> from spn.solvers import steady_state
>>> steady_state(sp.csr_array([[-1.0, 1.0], [1.0, -1.0]])).x.tolist()
[0.5, 0.5]
"""

from spn.ctmc import closed_classes
from spn.solvers.steady import METHODS, SolverResult, steady_state

__all__ = ["METHODS", "SolverResult", "closed_classes", "steady_state"]
