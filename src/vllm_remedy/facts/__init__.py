"""pyinfra facts read through the @k8s connector."""
