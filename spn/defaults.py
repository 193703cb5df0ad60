"""Defaults shared by the library and the command, each defined once.

>>> from spn.defaults import MAX_STATES, RTOL
>>> MAX_STATES, RTOL
(2000000, 1e-10)
"""

#: tangible states past which exploration stops (StateSpaceLimitError): about 1-2 GB of chain
MAX_STATES = 2_000_000

#: relative tolerance of the steady-state solvers (see spn.solvers.steady for the stopping rule)
RTOL = 1e-10
