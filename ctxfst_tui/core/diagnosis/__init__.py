"""Chunk-quality diagnosis: the issue model, the workspace index and the checks."""
