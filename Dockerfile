# The image the in-cluster CronJobs and the responder run (manifests/cronjob-drift.yaml, responder.yaml): this checkout installed once, at
# build time, so a scheduled check needs no package index and runs exactly the reviewed version.
#
#   docker build -t registry.example.com/vllm-remedy:0.1.0 .
#   docker push registry.example.com/vllm-remedy:0.1.0      # then set that image in the CronJobs
FROM python:3.12-slim

COPY pyproject.toml README.md /src/
COPY src /src/src
RUN pip install --no-cache-dir --disable-pip-version-check /src && rm -rf /src \
    && vllm-remedy --version
# `vllm-remedy respond` runs the runbook's deploys through the pyinfra CLI, as an engineer would.
COPY deploys /opt/vllm-remedy/deploys
ENV VLLM_REMEDY_DEPLOYS=/opt/vllm-remedy/deploys

# The CronJobs run as nobody with a read-only root filesystem; HOME points at their /tmp emptyDir.
USER 65534:65534
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1
ENTRYPOINT ["vllm-remedy"]
