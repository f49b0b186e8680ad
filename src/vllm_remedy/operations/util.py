"""The shared plumbing every vllm_remedy operation is built from (stable API; see each module for why).

* :func:`k8s_host` — the host's client, namespace/deployment, policy and annotation keys.
* :func:`set_template` — yield the guarded write that gives the Deployment a pod template (+ annotations),
  printing the template diff and the prediction once; yields nothing when the template already matches.
* :func:`write_command` / :data:`BuildOps` — a FunctionCommand applying any guarded JSON patch (ReplicaSet
  marks, HTTPRoute weights); :func:`annotation_ops` builds annotation-only patches.
* :func:`observe` — remember an object read while detecting changes, so execute tests the write against it.
* :func:`refuse` — fail a host with one line from inside an operation body (bodies must not raise).
* :func:`show` / :func:`note` — print once per host and operation / one prefixed line.
* :func:`predict_template` / :class:`Prediction` — KV tokens, maximum concurrency and outcome of a template.
* :func:`with_flags` / :func:`missing_flags` — edit the vLLM flags of a template (pure).
* :class:`ClusterClock` — the cluster's time (API server ``Date``) for every duration the runbook measures.
"""

from vllm_remedy.operations._clock import ClusterClock
from vllm_remedy.operations._context import K8sHost, k8s_host
from vllm_remedy.operations._show import note, should_show, show
from vllm_remedy.operations._template import missing_flags, server_of, with_flags
from vllm_remedy.operations._write import (
    BuildOps,
    annotation_ops,
    basis_for,
    change_lines,
    fail,
    forget,
    material,
    observe,
    refuse,
    run_write,
    set_template,
    write_command,
)
from vllm_remedy.remedies.predict import Prediction, pinned_gpu, predict_template

__all__ = [
    "BuildOps",
    "ClusterClock",
    "K8sHost",
    "Prediction",
    "annotation_ops",
    "basis_for",
    "change_lines",
    "fail",
    "forget",
    "k8s_host",
    "material",
    "missing_flags",
    "note",
    "observe",
    "pinned_gpu",
    "predict_template",
    "refuse",
    "run_write",
    "server_of",
    "set_template",
    "should_show",
    "show",
    "with_flags",
    "write_command",
]
