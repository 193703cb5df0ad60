"""From logs to models: fitted task-time laws, phases and delays, written as descriptions.

- :mod:`~spn.fit.erlang`: Erlang laws fitted to task durations;
- :mod:`~spn.fit.scaling`: phases pooled over runs, or scaled to another input size;
- :mod:`~spn.fit.order`: how much shorter a stage ran in its launch order than in random orders;
- :mod:`~spn.fit.logs`: :func:`fit_logs`, logs -> a :class:`FittedModel` (the description);
- :mod:`~spn.fit.write`: :func:`write_model`, the model as commented YAML or JSON.

>>> from spn.fit import fit_phase
>>> fit_phase([1.9, 2.0, 2.1], max_shape=10).fit.shape
10
"""

from spn.fit.erlang import ErlangFit, PhaseFit, fit_delay, fit_erlang_mle, fit_erlang_moments, fit_phase, fit_pooled
from spn.fit.logs import fit_logs
from spn.fit.write import FittedModel, write_model

__all__ = [
    "ErlangFit", "PhaseFit", "fit_erlang_mle", "fit_erlang_moments", "fit_phase", "fit_pooled", "fit_delay",
    "fit_logs", "FittedModel", "write_model",
]
