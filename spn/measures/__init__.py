"""What users ask of a solved net: ``net`` for any net, ``job`` for an application model."""

from spn.measures.job import JobMeasures, job_measures
from spn.measures.net import expected_tokens, probability, throughput

__all__ = ["JobMeasures", "expected_tokens", "job_measures", "probability", "throughput"]
