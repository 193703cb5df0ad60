"""Model descriptions: the YAML/JSON format of an application model, read and checked.

:mod:`~spn.description.model` holds the dataclasses, :mod:`~spn.description.load`
reads files, :mod:`~spn.description.validate` checks a mapping against the schema
and the rules a schema cannot say, :mod:`~spn.description.overrides` applies
``PATH=VALUE`` changes.

>>> from spn.description import load_description
>>> load_description("models/mapreduce.yaml").phases[0].name  # doctest: +SKIP
'map'
"""

from spn.description.load import load_description, parse_description
from spn.description.model import (Cluster, Description, Phase, QueryClass, Queue, Scheduler, Workload, job_classes,
                                   queues_of, require_single_class)
from spn.description.overrides import apply_overrides
from spn.description.validate import schema

__all__ = ["Cluster", "Description", "Phase", "QueryClass", "Queue", "Scheduler", "Workload", "apply_overrides",
           "job_classes", "load_description", "parse_description", "queues_of", "require_single_class", "schema"]
