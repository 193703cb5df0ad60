"""Ready-made application models (sub-models and builders)."""
