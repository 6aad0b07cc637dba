"""Cutting text into chunks: Markdown blocks, plain and PDF text, token counts, the chunker (options,
analysed blocks, cut points, header counts, packer, chunk, caches), spans, the preview and the
note-to-CtxFST convert."""
