"""pyinfra operations: facts -> remedies -> diff -> a command that applies the patch."""
