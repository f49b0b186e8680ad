"""Pod specs are found at every depth real manifests use, and bad YAML names its source."""

from __future__ import annotations

import pytest

from vllm_remedy.errors import UserError
from vllm_remedy.vllm import manifest

C = {"containers": [{"name": "v", "command": ["vllm", "serve", "m"]}]}


@pytest.mark.parametrize(("doc", "paths"), [
    ({"kind": "Pod", "spec": C}, ["spec"]),
    ({"kind": "Deployment", "spec": {"template": {"spec": C}}}, ["spec.template.spec"]),
    ({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": C}}}}},
     ["spec.jobTemplate.spec.template.spec"]),
    ({"kind": "LeaderWorkerSet", "spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": C},
                                                                   "workerTemplate": {"spec": C}}}},
     ["spec.leaderWorkerTemplate.leaderTemplate.spec", "spec.leaderWorkerTemplate.workerTemplate.spec"]),
    ({"kind": "List", "items": [{"kind": "Pod", "spec": C}, {"kind": "Service", "spec": {}}]}, ["items[0].spec"]),
    ({"spec": C}, ["spec"]),
    (C, [""]),
    ({"kind": "ConfigMap", "data": {"x": "containers: []"}}, []),
])
def test_pod_spec_paths(doc, paths) -> None:
    found = manifest.pod_specs(doc)
    assert [p for p, _ in found] == paths
    for _, spec in found:
        assert spec is C or spec == C


def test_load_documents_skips_empty_and_names_source_on_error() -> None:
    assert manifest.load_documents("---\na: 1\n---\n---\nb: 2\n", "f.yaml") == [{"a": 1}, {"b": 2}]
    with pytest.raises(UserError, match=r"^f\.yaml: not valid YAML at line 1: "):
        manifest.load_documents("a: b: c\n", "f.yaml")


def test_dump_round_trips_scripts_exactly() -> None:
    docs = [{"kind": "Pod", "spec": {"containers": [{"name": "v", "args": ["set -e\nvllm serve m \\\n  --port 1\n",
                                                                             "trailing space \n x"]}]}}, {"b": 1}]
    text = manifest.dump_documents(docs)
    assert manifest.load_documents(text, "x") == docs
    assert text.startswith("---\nkind: Pod\n")
