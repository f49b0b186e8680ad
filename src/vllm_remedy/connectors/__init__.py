"""pyinfra connectors: @k8s/<cluster>/<namespace>[/<deployment>]."""
