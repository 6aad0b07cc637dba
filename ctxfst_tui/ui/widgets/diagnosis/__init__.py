"""The Diagnosis view and the per-document findings list."""
