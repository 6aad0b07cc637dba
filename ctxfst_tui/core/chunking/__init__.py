"""Cutting text into chunks: Markdown blocks, plain and PDF text, token counts, the chunker, spans, the preview and the note-to-CtxFST convert."""
