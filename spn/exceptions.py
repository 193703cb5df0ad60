"""The errors spn raises: one shallow tree, rooted at :class:`SpnError`.

>>> from spn.exceptions import ModelError, SpnError
>>> issubclass(ModelError, SpnError)
True
"""


class SpnError(Exception):
    """Base of every error spn raises on purpose.

    ``option``, when given, names the keyword argument that would change the
    outcome; the command line shows it as its flag.

    >>> SpnError("the log did not finish", option="allow_incomplete").option
    'allow_incomplete'
    """

    def __init__(self, *args, option: str | None = None):
        super().__init__(*args)
        self.option = option


class ModelError(SpnError):
    """A net or a model description is invalid.

    ``problems`` lists every problem found (a validator reports all of them,
    not only the first); ``str(error)`` joins them with ``; ``.
    """

    def __init__(self, problems, *, option: str | None = None):
        if isinstance(problems, str):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("; ".join(self.problems), option=option)


class StateSpaceLimitError(SpnError):
    """Exploration stopped before the chain was whole (``max_states``, ``max_seconds``, memory).

    ``reached``, when known: the tangible markings found by then, a lower bound on the chain's size.
    """

    def __init__(self, *args, option: str | None = None, reached: int | None = None):
        super().__init__(*args, option=option)
        self.reached = reached

    @classmethod
    def beyond(cls, max_states: int) -> "StateSpaceLimitError":
        """The error for passing ``max_states``, with what the user can do about it."""
        return cls(f"more than {max_states:,} tangible markings (max_states): solve a smaller "
                   f"configuration, raise max_states if memory allows, or estimate it by simulation",
                   option="max_states", reached=max_states)


class TimelessTrapError(SpnError):
    """Vanishing markings that loop among themselves with no way out."""


class NotErgodicError(SpnError):
    """The CTMC has no unique steady state (several closed classes)."""


class ConvergenceError(SpnError):
    """An iterative solver did not reach its tolerance.

    ``result`` holds the solver's :class:`~spn.solvers.SolverResult`.
    """

    def __init__(self, result):
        self.result = result
        super().__init__(
            f"{result.method} did not converge: residual {result.residual:.3g} "
            f"after {result.niter} iterations ({result.message})"
        )


class ImplausibleResultError(ConvergenceError):
    """A steady state, or a measure computed from it, is impossible: a probability outside
    [0, 1], probabilities not summing to 1, a throughput that is not positive and finite, a
    negative execution time, a utilisation outside [0, 1]. The numbers cannot be trusted,
    as after a solver that did not converge (``result``: the solver's result, if known)."""

    def __init__(self, message: str, result=None):
        self.result = result
        SpnError.__init__(self, f"implausible steady state: {message}")


class LogFormatError(SpnError):
    """An execution log could not be read."""
