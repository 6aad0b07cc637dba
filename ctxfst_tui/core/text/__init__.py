"""Plain-text building blocks shared by the chunker, diagnosis, entities, contextualize and
summary: words, stop words, stems, sentences and TF-IDF, each written once (stdlib only)."""
