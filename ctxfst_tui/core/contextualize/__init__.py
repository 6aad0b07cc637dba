"""Contextual retrieval notes: the material given to the model, the prompts, the gate on answers and the run."""
