"""The model-job status line."""
