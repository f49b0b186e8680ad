"""PromQL building blocks: quoted label matchers and the selectors that say "this policy's vLLM pods".

Kept apart from the rules so the quoting (a PromQL string inside YAML) is written and tested once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from vllm_remedy.policy import Policy

#: Any image whose reference mentions vllm (vllm/vllm-openai, rocm/vllm, …) runs vLLM.
VLLM_IMAGE_PATTERN = ".*vllm.*"
#: ReplicaSet pod-template-hash and pod suffix, as the deployment controller names pods.
_POD_SUFFIX = "-[a-z0-9]+-[a-z0-9]+"
#: RE2 metacharacters; policy names are RFC 1123, so in practice only "." needs it.
_RE2_META = re.compile(r"([.\\+*?()|\[\]{}^$])")
#: kube-state-metrics turns a pod label key into a Prometheus label name this way (label_ + sanitized key).
_LABEL_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_]")


def quote(value: str) -> str:
    """A PromQL double-quoted string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def literal_regex(value: str) -> str:
    """``value`` matched literally by an (anchored) RE2 regex."""
    return _RE2_META.sub(r"\\\1", value)


def any_of(values: Iterable[str], suffix: str = "") -> str:
    """An RE2 alternation matching exactly one of ``values`` (each followed by ``suffix``)."""
    return "|".join(literal_regex(v) + suffix for v in values)


def ksm_label_name(key: str) -> str:
    """The label kube-state-metrics gives a pod label on ``kube_pod_labels`` (``app.kubernetes.io/name`` →
    ``label_app_kubernetes_io_name``)."""
    return "label_" + _LABEL_NAME_UNSAFE.sub("_", key)


def matchers(pairs: Mapping[str, tuple[str, str]]) -> str:
    """``{name: (op, value)}`` → ``{name op "value", …}`` in the given order; ``""`` for no matchers."""
    if not pairs:
        return ""
    return "{" + ", ".join(f"{name}{op}{quote(value)}" for name, (op, value) in pairs.items()) + "}"


def _repository(image: str) -> str:
    """``registry:5000/org/vllm:v1@sha256:…`` → ``registry:5000/org/vllm`` (tag and digest dropped)."""
    name = image.split("@", 1)[0]
    head, _, last = name.rpartition("/")
    return (head + "/" if head else "") + last.split(":", 1)[0]


@dataclass(frozen=True)
class PodScope:
    """Which pods, containers and vLLM series a policy's alerts look at, as PromQL matchers."""

    namespaces: tuple[str, ...]
    deployments: tuple[str, ...]
    models: tuple[str, ...]
    match_labels: tuple[tuple[str, str], ...]
    images: tuple[str, ...]

    @classmethod
    def of(cls, policy: Policy) -> PodScope:
        """The policy's target; known-good images widen "vLLM container" beyond images named *vllm*."""
        repos = sorted({_repository(unit.image) for unit in policy.known_good})
        t = policy.target
        return cls(tuple(t.namespaces), tuple(t.deployments), tuple(t.models),
                   tuple(sorted(t.match_labels.items())), tuple(repos))

    def pod_matchers(self) -> dict[str, tuple[str, str]]:
        """Namespace and pod-name matchers shared by kube-state-metrics and scraped vLLM series."""
        out: dict[str, tuple[str, str]] = {}
        if self.namespaces:
            out["namespace"] = ("=~", any_of(self.namespaces))
        if self.deployments:
            out["pod"] = ("=~", any_of(self.deployments, _POD_SUFFIX))
        return out

    def image_regex(self) -> str:
        """Container images that count as vLLM for this policy."""
        known = [literal_regex(repo) + "(:.*|@.*)?" for repo in self.images if "vllm" not in repo.lower()]
        return "|".join([VLLM_IMAGE_PATTERN, *known])

    def ksm(self, metric: str, **extra: str) -> str:
        """A kube-state-metrics selector for this policy's pods (``extra`` = exact label matches)."""
        pairs = self.pod_matchers()
        pairs.update({k: ("=", v) for k, v in extra.items()})
        return metric + matchers(pairs)

    def vllm_containers(self) -> str:
        """``and on(namespace, pod, container) …``: keep only series of vLLM containers of targeted pods."""
        pairs = self.pod_matchers()
        pairs["image"] = ("=~", self.image_regex())
        clause = f" and on (namespace, pod, container) kube_pod_container_info{matchers(pairs)}"
        if self.match_labels:
            labels = self.pod_matchers()
            labels.update({ksm_label_name(k): ("=", v) for k, v in self.match_labels})
            clause += f" and on (namespace, pod) kube_pod_labels{matchers(labels)}"
        return clause

    def vllm_series(self, metric: str) -> str:
        """A selector for a metric scraped from the vLLM server itself (labels namespace/pod from the scrape)."""
        pairs = self.pod_matchers()
        if self.models and not self.deployments:
            pairs["model_name"] = ("=~", any_of(self.models))
        return metric + matchers(pairs)

    def host_regex(self) -> str:
        """The ``host`` label our own metrics carry (``@k8s/<cluster>/<namespace>/<deployment>``)."""
        ns = f"({any_of(self.namespaces)})" if self.namespaces else "[^/]+"
        dep = f"({any_of(self.deployments)})" if self.deployments else "[^/]+"
        return f"@k8s/[^/]+/{ns}/{dep}"
