"""The in-process core, one package per concept: the CtxFST format, workspaces, chunking,
entities, diagnosis, retrieval, shared text tools, model backends, contextualize, summaries, and
the environment report (``doctor``).

Nothing under ``core`` imports textual or rich, nor the layers above it (``services``, ``ui``,
``cli``): import-linter contracts in ``pyproject.toml`` check both, so the headless command
line and scripts can use the core without a terminal UI.
"""
