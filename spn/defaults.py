"""Defaults shared by the library and the command, each defined once.

>>> from spn.defaults import MAX_STATES, RTOL, SEED
>>> MAX_STATES, RTOL, SEED
(2000000, 1e-10, 1)
"""

#: tangible states past which exploration stops (StateSpaceLimitError): about 1-2 GB of chain
MAX_STATES = 2_000_000

#: relative tolerance of the steady-state solvers (see spn.solvers.steady for the stopping rule)
RTOL = 1e-10

#: the random seed of every simulation when none is given, in every command and in the library: the same
#: question gets the same number from each of them, run after run (another seed draws other numbers)
SEED = 1
