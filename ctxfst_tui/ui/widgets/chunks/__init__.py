"""The Chunks view: the chunk map and the chunk-boundary preview with its controls."""
