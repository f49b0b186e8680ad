"""Pure vLLM knowledge, no I/O: command lines, memory model, startup logs, version rules, catalogs."""
