"""The rehearsal cluster: a kubectl-compatible Kubernetes API on 127.0.0.1 with simulated vLLM pods."""
