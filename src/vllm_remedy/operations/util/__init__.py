"""The shared plumbing every vllm_remedy operation is built from, as pyinfra keeps its own in ``operations/util``.

* :mod:`.context` — :func:`k8s_host`: the host's client, namespace/deployment, policy and annotation keys;
  :func:`deployment_object` / :func:`pods_fact`: the Deployment and its pods the operation plans on.
* :mod:`.write` — :class:`Change` and :func:`change_ops`, the one patch builder; :func:`template_change` shows the
  diff and prediction of giving the Deployment a pod template and returns the guarded write
  (:func:`set_template` yields it);
  :func:`write_command` for any guarded JSON patch; :func:`observe` remembers what the diff was built on;
  :func:`refuse` fails a host with one line from inside an operation body (bodies must not raise).
* :mod:`.plan` — :func:`keeps_its_plan`: an approved change is never silently dropped at execute.
* :mod:`.show` — :func:`show` / :func:`note` / :func:`noop`: print once per host and operation, everything
  before the operation's first yield.
* :mod:`.planned` — while detecting changes, the objects as the run's earlier operations will have left them.
* :mod:`.template` — :func:`with_flags` / :func:`missing_flags` / :func:`server_of`: pure template edits.
* :mod:`.flags` — :func:`propose`: set vLLM flags, policy and memory model asked first.
* :mod:`.wait` — :func:`wait_rollout`: the FunctionCommand that waits for a rollout in cluster time.
"""

from vllm_remedy.operations.util.context import K8sHost, deployment_object, k8s_host, pods_fact
from vllm_remedy.operations.util.flags import describe, flag_text, propose, same_value
from vllm_remedy.operations.util.plan import forget_plans, keeps_its_plan
from vllm_remedy.operations.util.show import noop, note, should_show, show
from vllm_remedy.operations.util.template import missing_flags, server_of, with_flags
from vllm_remedy.operations.util.wait import crash_loop_ahead, wait_fails, wait_rollout
from vllm_remedy.operations.util.write import (
    BuildOps,
    Change,
    basis_for,
    change_command,
    change_lines,
    change_ops,
    fail,
    forget,
    material,
    observe,
    refuse,
    run_write,
    set_template,
    template_change,
    write_command,
    wrote_in_this_run,
)

__all__ = [
    "BuildOps",
    "Change",
    "K8sHost",
    "basis_for",
    "change_command",
    "change_lines",
    "change_ops",
    "crash_loop_ahead",
    "deployment_object",
    "describe",
    "fail",
    "flag_text",
    "forget",
    "forget_plans",
    "k8s_host",
    "keeps_its_plan",
    "material",
    "missing_flags",
    "noop",
    "note",
    "observe",
    "pods_fact",
    "propose",
    "refuse",
    "run_write",
    "same_value",
    "server_of",
    "set_template",
    "should_show",
    "show",
    "template_change",
    "wait_fails",
    "wait_rollout",
    "with_flags",
    "write_command",
    "wrote_in_this_run",
]
