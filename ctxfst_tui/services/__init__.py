"""Textual-free state the workbench drives: the editing session, reports, analysis, model jobs and saving.

Nothing here imports textual or rich; the UI calls in, never the other way round."""
