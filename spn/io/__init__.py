"""Input and output: model descriptions (YAML/JSON + JSON Schema).

>>> from spn.io import load_description
>>> load_description("models/mapreduce.yaml").phases[0].name  # doctest: +SKIP
'map'
"""

from spn.io.description import (
    Cluster,
    Description,
    Phase,
    Workload,
    apply_overrides,
    load_description,
    parse_description,
    schema,
)

__all__ = [
    "Cluster",
    "Description",
    "Phase",
    "Workload",
    "apply_overrides",
    "load_description",
    "parse_description",
    "schema",
]
