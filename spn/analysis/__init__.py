"""Answers built on the pipeline: solve a description, plan a parameter, sweep a grid."""
