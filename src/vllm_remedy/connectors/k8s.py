"""The ``@k8s`` pyinfra connector: one vLLM Deployment per host, read through a verb language.

Hosts::

    @k8s/<cluster>/<namespace>/<deployment>          one Deployment
    @k8s/<cluster>/<namespace>/<kind>/<name>         one workload of kind deployment, statefulset,
                                                     leaderworkerset or inferenceservice
    @k8s/<cluster>/<namespace>                       every vLLM workload there, of every kind the
                                                     cluster serves (one host each)

Deployments, StatefulSets and KServe InferenceServices are remediated (a StatefulSet by ``deploys/restore.py``'s
rollback only so far; an InferenceService by restore and diagnose, through its own spec);
a host of another kind connects (so a wrong name, a kind the cluster does not serve or a workload without vLLM
is reported as such) and then fails, saying so.

Host data (plain keys, as an inventory or group data sets them):

+ ``kubeconfig``: path of the kubeconfig file; default kubectl's rules (``KUBECONFIG``, ~/.kube/config,
  in-cluster service account).
+ ``context``: kube context to use; default ``k8s_contexts[<cluster>]``, else ``<cluster>`` itself.
+ ``k8s_contexts``: alias → context name, or alias → ``{context: ..., kubeconfig: ...}``; lets
  ``@k8s/prod/...`` name ``gke_acme_europe-west4_prod`` (and contexts with ``/`` in their name, like EKS ARNs).
+ ``policy``: path of a policy YAML (relative to the working directory), or a loaded ``Policy``.
+ ``container``: the vLLM container's name, when several containers of the pod run vLLM.
+ ``progress_seconds``: real seconds between the progress reports of a rollout wait (default 5; 0: none).

Any other key fails the host at connect, named in one line with the closest known key (``polcy``: "did you mean
'policy'?"), except those one deploy reads (``connectors.host_data.DEPLOY_KEYS``: ``eager_ttl``, ``revision``, ...;
given with ``--data``, only when that deploy runs) and pyinfra's own (``_sudo``, ``ssh_user``, ...). A host with
no ``policy`` says at connect that the built-in defaults govern it.

Why ``connect()`` does real work: a missing context, a Deployment that does not exist, a Deployment with
no vLLM server, or an invalid policy is bad input. Failing at connect prints one line per host, marks
it failed (pyinfra exits non-zero) and guarantees no operation ran against it.

The namespace form is expanded when the inventory is loaded — before pyinfra knows any host data — so it
uses ``<cluster>`` as a context of the default kubeconfig. For aliases or other kubeconfigs, list the hosts
in the inventory file with :func:`vllm_hosts`. If expansion fails, the host ``@k8s/<cluster>/<namespace>``
stays in the inventory and fails at connect with the reason (other hosts carry on).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from io import IOBase
from pathlib import Path
from typing import Any

from pyinfra import logger
from pyinfra.api.exceptions import ConnectError, InventoryError
from pyinfra.api.output import echo
from pyinfra.connectors.base import BaseConnector
from pyinfra.connectors.util import CommandOutput, OutputLine

from vllm_remedy.connectors.fleet import FleetReads
from vllm_remedy.connectors.host_data import (
    DATA_META,
    PROGRESS_SECONDS,
    HostDataError,
    K8sData,
    data_seconds,
    data_str,
    deploys_run,
    unknown_keys,
)
from vllm_remedy.connectors.hosts import PREFIX, Target, parse_target, resolve_access
from vllm_remedy.connectors.models import learn_model
from vllm_remedy.connectors.namespaces import list_vllm_deployments, list_vllm_workloads
from vllm_remedy.connectors.scope import Scope, VerbError
from vllm_remedy.connectors.verbs import run_verb
from vllm_remedy.errors import UserError
from vllm_remedy.kube.annotations import Keys
from vllm_remedy.kube.client import KubeClient
from vllm_remedy.kube.errors import KubeError, NotFoundError
from vllm_remedy.kube.inferenceservice import runtime_for
from vllm_remedy.kube.inferenceservice import template_of as isvc_template
from vllm_remedy.kube.kinds import DEPLOYMENT, INFERENCESERVICE
from vllm_remedy.kube.printable import escaped
from vllm_remedy.kube.snapshot import Snapshot
from vllm_remedy.kube.workloads import NotServedError, get_workload
from vllm_remedy.policy import Policy, load_policies, load_policy, policy_for
from vllm_remedy.vllm import resolved
from vllm_remedy.vllm.cmdline import ServerCommand, find_server

GROUP = PREFIX
__all__ = ["K8sConnector", "list_vllm_deployments", "list_vllm_workloads", "vllm_hosts"]


def _host_entry(target: Target) -> tuple[str, dict[str, Any], list[str]]:
    data = {"k8s_cluster": target.cluster, "k8s_namespace": target.namespace}
    if target.deployment:
        data["k8s_deployment"] = target.deployment
    if target.kind != DEPLOYMENT.word:
        data["k8s_kind"] = target.kind
    return target.host_name, data, [GROUP]


def vllm_hosts(cluster: str, namespace: str, *, context: str | None = None, kubeconfig: str | None = None,
               data: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """For inventory files: ``(host, data)`` for every vLLM workload of a namespace, reached as given.

    Use it where the namespace form cannot work (an alias, a kubeconfig other than the default); the
    ``context``/``kubeconfig`` used for listing are put in each host's data so connect uses the same.
    Raises InventoryError (pyinfra prints one line and stops) when the cluster cannot be listed.
    """
    try:
        target = parse_target(f"{cluster}/{namespace}")
    except UserError as exc:
        raise InventoryError(str(exc)) from exc
    extra = dict(data or {})
    if context:
        extra.setdefault("context", context)
    if kubeconfig:
        extra.setdefault("kubeconfig", kubeconfig)
    try:
        client = KubeClient.for_context(context or cluster, kubeconfig)
        found = list_vllm_workloads(client, namespace, target.host_name)
    except UserError as exc:
        raise InventoryError(f"{target.host_name}: cannot list vLLM workloads: {exc}") from exc
    return [(target.with_deployment(n, kind).host_name, dict(extra)) for kind, n in found]


class K8sConnector(BaseConnector):
    """pyinfra connector for ``@k8s/<cluster>/<namespace>[/<deployment>]`` (see the module docstring)."""

    handles_execution = True
    data_cls = K8sData
    data_meta = DATA_META
    data: K8sData

    client: KubeClient | None = None
    policy: Policy | None = None
    keys: Keys = Keys()
    server: ServerCommand | None = None
    #: Why this host's model resolves nowhere (None when it does): each prediction then says so.
    model_note: str | None = None
    #: The environment key its model's answer is kept under (``hub.answer_key``): what its predictions look up.
    answer_key: tuple[Any, ...] | None = None
    scope: Scope | None = None
    progress_seconds: float = PROGRESS_SECONDS
    #: Answers by verb command once ``share`` is on; None means every fact reads the cluster afresh.
    snapshot: dict[str, list[str]] | None = None
    #: The run's shared reads (``share``); None: this host reads and loads everything itself.
    fleet: FleetReads | None = None

    @staticmethod
    def make_names_data(name: str | None = None) -> Iterator[tuple[str, dict[str, Any], list[str]]]:
        """Expand @k8s/cluster/ns[/deploy] into hosts; errors (a bad name too) wait for connect() so pyinfra
        reports them per host and runs the others."""
        try:
            target = parse_target(name)
        except UserError as exc:  # one bad host name fails that host at connect; the others run
            yield (f"{PREFIX}/{name}" if name else PREFIX), {"k8s_name_error": str(exc)}, [GROUP]
            return
        if target.deployment:
            yield _host_entry(target)
            return
        yield from _expand(target)

    # ---- connect ----------------------------------------------------------------------
    @property
    def target(self) -> Target:
        """The cluster/namespace/Deployment this host stands for, rebuilt from its host data."""
        return Target(self.data.get("k8s_cluster", ""), self.data.get("k8s_namespace", ""),
                      self.data.get("k8s_deployment"), self.data.get("k8s_kind") or DEPLOYMENT.word)

    def connect(self) -> None:
        """Open the API client; an inventory expansion error surfaces here, where pyinfra expects failures."""
        error = self.data.get("k8s_expand_error")
        if error:
            raise _connect_error(error)
        if self.data.get("k8s_name_error"):
            raise _connect_error(self.data["k8s_name_error"], bad_input=True)
        problem = unknown_keys(self.host.data.dict(), self.host.inventory.get_override_data(), deploys_run())
        if problem is not None:  # before any read: a misspelt key must not run under the defaults
            raise _connect_error(problem, bad_input=True)
        target = self.target
        where = f"{target.kind} {target.namespace}/{target.deployment}"
        try:
            self.progress_seconds = data_seconds(self.data, "progress_seconds", PROGRESS_SECONDS)
            loaded = self._load_policy()
            access = resolve_access(target.cluster, context=data_str(self.data, "context"),
                                    kubeconfig=data_str(self.data, "kubeconfig"),
                                    aliases=self.data.get("k8s_contexts"))
            if access.kubeconfig and not Path(os.path.expanduser(access.kubeconfig)).is_file():
                raise UserError(f"{access.kubeconfig_via}: {access.kubeconfig}: no such file")
            base = KubeClient.for_context(access.context, access.kubeconfig) if self.fleet is None else None
            # one read per run; a deploy's Deployment host reads one snapshot too (its waits and guarded writes go
            # live()), the other kinds' waits poll their client, so they read the cluster as it is
            client = (self.fleet.client(access.context, access.kubeconfig) if base is None
                      else Snapshot(base, writes=True, epoch=lambda: getattr(self.state, "is_executing", None))
                      if target.kind == DEPLOYMENT.word else base)
        except UserError as exc:  # the kube layer speaks to CLI users; here the knob is host data
            raise _connect_error(str(exc).replace("pass --kubeconfig", "set host data kubeconfig"),
                                 bad_input=True) from exc
        if not target.workload.remediable:
            self._refuse_other_kind(client, target, where)
        try:
            deployment = (client.get_deployment(target.namespace, str(target.deployment))
                          if target.kind == DEPLOYMENT.word else
                          get_workload(client, target.workload, target.namespace, str(target.deployment)))
        except NotFoundError as exc:
            raise _connect_error(f"{where} not found in context {client.context} "
                               f"({exc.body.get('message') if isinstance(exc.body, dict) else exc})") from exc
        except NotServedError as exc:
            raise _connect_error(f"{where}: {exc}", bad_input=True) from exc
        except KubeError as exc:
            raise _connect_error(str(exc)) from exc
        try:
            if target.kind == INFERENCESERVICE.word:  # the pod spec its predictor makes (runtime + model.args)
                spec = isvc_template(deployment, runtime_for(client, deployment))["spec"]
                self.server = find_server(spec, data_str(self.data, "container"))
            else:
                self.server = _workload_server(target.workload.pod_specs_of(deployment),
                                               data_str(self.data, "container"))
        except UserError as exc:
            raise _connect_error(f"{where}: {exc}") from exc
        meta = deployment.get("metadata") or {}
        if isinstance(loaded, dict):  # a policy directory: the policy whose target covers this Deployment
            try:
                loaded = policy_for(loaded, f"host data policy {self.data.get('policy')}", target.namespace,
                                    str(target.deployment), self.server.model, meta.get("labels") or {})
            except UserError as exc:
                raise _connect_error(str(exc), bad_input=True) from exc
        if loaded is not None:
            self._check_policy_target(deployment, loaded, self.server)
            self.keys = Keys(loaded.annotation_prefix)
        else:  # every run says so: a host governed by defaults nobody chose must not pass for one with a policy
            logger.warning(f"{self.host.print_prefix}note: governed by the built-in default policy "
                           f"({NO_POLICY_DATA})")
        self.policy = loaded if loaded is not None else unnamed_default()
        self.client = client
        self.model_note, self.answer_key = learn_model(client, target.namespace, self.server, loaded)
        self.scope = Scope(client, target.namespace, str(target.deployment), self.keys.prefix,
                           self.server.container_name, kind=target.kind)

    def _refuse_other_kind(self, client: KubeClient, target: Target, where: str) -> None:
        """A workload of a kind we read but do not remediate yet: say what is wrong with it, or that we cannot."""
        kind = target.workload
        try:
            obj = get_workload(client, kind, target.namespace, str(target.deployment))
        except NotFoundError as exc:
            raise _connect_error(f"{where} not found in context {client.context} "
                                 f"({exc.body.get('message') if isinstance(exc.body, dict) else exc})") from exc
        except NotServedError as exc:
            raise _connect_error(f"{where}: {exc}", bad_input=True) from exc
        except KubeError as exc:
            raise _connect_error(str(exc)) from exc
        specs = kind.pod_specs_of(obj)
        if not specs:
            raise _connect_error(f"{where}: no pod template found in the object", bad_input=True)
        reasons = []
        for spec in specs:
            try:
                find_server(spec, data_str(self.data, "container"))
                break
            except UserError as exc:
                reasons.append(str(exc))
        else:
            raise _connect_error(f"{where}: {reasons[0]}", bad_input=True)
        raise _connect_error(f"{where}: runs vLLM, but vllm-remedy does not remediate a {kind.kind} yet "
                             "(only Deployments, StatefulSets and LeaderWorkerSets); nothing was changed",
                             bad_input=True)

    def _load_policy(self) -> Policy | dict[str, Policy] | None:
        """Host data ``policy``: a Policy, a policy file, or a directory of them (chosen per Deployment at connect)."""
        value = self.data.get("policy")
        if value is None or isinstance(value, Policy):
            return value
        if not isinstance(value, (str, os.PathLike)):
            raise UserError(f"host data policy: expected a policy file or directory, got {type(value).__name__}")
        path = Path(value)

        def load() -> Policy | dict[str, Policy]:
            return load_policies(path) if path.is_dir() else load_policy(path)

        return load() if self.fleet is None else self.fleet.policy(os.fspath(value), load)

    def _check_policy_target(self, deployment: dict[str, Any], policy: Policy, server: ServerCommand) -> None:
        meta = deployment.get("metadata") or {}
        if not policy.target.matches(meta.get("namespace", ""), meta.get("name", ""), server.model,
                                     meta.get("labels") or {}):
            raise _connect_error(f"policy {policy.source}: target does not cover deployment "
                                 f"{meta.get('namespace')}/{meta.get('name')} (model {server.model}); "
                                 "pick the policy for this Deployment in host data", bad_input=True)

    def disconnect(self) -> None:
        """Close the API session so no connection outlives the deploy (a shared one is the run's to close)."""
        if self.client is not None and self.fleet is None:
            try:
                self.client.api.close()
            except Exception:  # closing a pool must never fail a run
                logger.debug("closing the API client failed", exc_info=True)
        self.client = None
        self.scope = None

    # ---- execution --------------------------------------------------------------------
    def run_shell_command(self, command: Any, print_output: bool = False, print_input: bool = False,
                          **arguments: Any) -> tuple[bool, CommandOutput]:
        """Run a k8s-* verb instead of a shell command: a cluster has no shell, facts speak verbs."""
        text = command.get_raw_value() if hasattr(command, "get_raw_value") else str(command)
        if print_input:
            echo(f"{self.host.print_prefix}>>> {text}", err=True)
        ok, output = self._run(text)
        if print_output:  # pyinfra then leaves printing (also of errors) to the connector
            for line in output.output_lines:
                echo(f"{self.host.print_prefix}{line}", err=True)
        return ok, output

    def share(self, fleet: FleetReads) -> None:
        """Read through ``fleet`` from connect on, and answer each verb command once: for runs that never write.

        pyinfra 3.10 keeps no fact cache, so every operation of a drift check re-reads the same Deployment,
        pods and nodes; and each host would load its own kubeconfig and policy. A run that only plans is
        better served by one snapshot per cluster: each namespace listed once, every check and proposed fix
        judging the same state. Call before ``connect``.
        """
        self.fleet = fleet
        self.snapshot = {}

    def _run(self, text: str) -> tuple[bool, CommandOutput]:
        if self.scope is None:
            return False, _stderr(f"{self.host.name}: not connected")
        lines = None if self.snapshot is None else self.snapshot.get(text)
        if lines is None:
            try:
                lines = run_verb(self.scope, text)
            except (VerbError, UserError) as exc:
                return False, _stderr(str(exc))
            if self.snapshot is not None:
                self.snapshot[text] = lines
        return True, CommandOutput([OutputLine("stdout", line) for line in lines])

    def put_file(self, filename_or_io: str | IOBase, remote_filename: str, remote_temp_filename: str | None = None,
                 print_output: bool = False, print_input: bool = False, **arguments: Any) -> bool:
        """Refuse: a Deployment is changed through the API, never by copying files into pods."""
        logger.error(f"{self.host.print_prefix}the @k8s connector cannot upload files ({remote_filename})")
        return False

    def get_file(self, remote_filename: str, filename_or_io: str | IOBase, remote_temp_filename: str | None = None,
                 print_output: bool = False, print_input: bool = False, **arguments: Any) -> bool:
        """Refuse: facts are read through verbs, not by copying files out of pods."""
        logger.error(f"{self.host.print_prefix}the @k8s connector cannot download files ({remote_filename})")
        return False


def _host_answer_key() -> tuple[Any, ...] | None:
    """The environment key the current pyinfra host's model was resolved under (``connectors.models``), so each host's
    predictions read its own pod's answer (two Deployments on one model with different HF_TOKENs): pyinfra connects
    every host before any operation runs, and runs each host's work with its context set, in its own greenlet."""
    from pyinfra.context import ctx_host

    host = ctx_host.get()
    return getattr(getattr(host, "connector", None), "answer_key", None) if host is not None else None


resolved.read_scope_with(_host_answer_key)


#: Why a host has the built-in defaults: what its messages say instead of a file name.
NO_POLICY_DATA = "no `policy` in host data"


def unnamed_default() -> Policy:
    """The policy of a host whose data names none: ``Policy()``'s defaults, as operations always applied them, with a
    source that says so ("policy built-in default (no `policy` in host data) names none in gpu.products")."""
    policy = Policy()
    policy._source = f"built-in default ({NO_POLICY_DATA})"
    return policy


def _workload_server(specs: list[dict[str, Any]], container: str | None) -> ServerCommand:
    """The vLLM server of the first pod spec that runs one (an LWS: the leader's, else the workers'); the first
    spec's reason when none does."""
    if not specs:
        raise UserError("no pod template found in the object")
    reasons = []
    for spec in specs:
        try:
            return find_server(spec, container)
        except UserError as exc:
            reasons.append(exc)
    raise reasons[0]


def _connect_error(message: str, *, bad_input: bool = False) -> ConnectError:
    """pyinfra prints the message after the host prefix: keep it to one line."""
    return (HostDataError if bad_input else ConnectError)(escaped(" ".join(str(message).split())))


def _stderr(message: str) -> CommandOutput:
    return CommandOutput([OutputLine("stderr", escaped(" ".join(message.split())))])


def _expand(target: Target) -> Iterator[tuple[str, dict[str, Any], list[str]]]:
    """Namespace form: one host per vLLM workload, or the namespace host carrying why expansion failed."""
    try:
        client = KubeClient.for_context(target.cluster)
        found = list_vllm_workloads(client, target.namespace, target.host_name)
    except UserError as exc:
        reason = (f"cannot expand {target.host_name} (namespace hosts expand at inventory load with the default "
                  f"kubeconfig and {target.cluster!r} as context; for aliases or another kubeconfig list hosts with "
                  f"vllm_remedy.connectors.k8s.vllm_hosts): {exc}")
    else:
        if found:
            for kind, name in found:
                yield _host_entry(target.with_deployment(name, kind))
            return
        reason = f"no workload in namespace {target.namespace} runs vLLM (context {client.context})"
    host, data, groups = _host_entry(target)
    data["k8s_expand_error"] = " ".join(reason.split())
    yield host, data, groups
