"""One CtxFST file: its source bytes, frontmatter, chunk tags, the parsed Document, findings, validation and export."""
