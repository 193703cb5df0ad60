"""What users ask of a solved net: ``net`` for any net, ``job`` for an application model."""

from spn.measures.job import (
    ClassesMeasures, ImplausibleResultError, JobMeasures, check_distribution, check_measures, classes_measures,
    job_measures,
)
from spn.measures.net import expected_tokens, probability, throughput

__all__ = ["ClassesMeasures", "ImplausibleResultError", "JobMeasures", "check_distribution", "check_measures",
           "classes_measures",
           "expected_tokens", "job_measures", "probability", "throughput"]
