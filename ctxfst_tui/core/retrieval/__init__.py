"""Retrieval: a LanceDB index of the workspace, embedders, queries that explain themselves, evaluation."""
