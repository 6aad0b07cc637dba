"""Local model runtime (llama.cpp in-process). Imported lazily: llama_cpp is heavy."""
