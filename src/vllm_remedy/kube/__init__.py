"""Kubernetes access and semantics (kubectl's rollout rules in Python)."""
