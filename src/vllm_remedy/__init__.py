"""vllm-remedy: remediation playbooks for vLLM on Kubernetes that crash-loops with CUDA out of memory."""

__version__ = "0.1.0"
