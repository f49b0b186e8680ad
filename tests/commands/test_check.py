"""`vllm-remedy check` end to end: the runbook's good and bad revisions as a CI job would see them.

The revisions are tests/data/manifests/runbook/: revision 14 of the rehearsal cluster's runbook seed and the
incident's revision 15 (restore_world.bad_revision); the first two tests keep the files equal to those.
"""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from fixtures.restore_world import bad_revision
from fixtures.yaml_bombs import alias_bomb, hostile_inputs
from vllm_remedy.sim.seed import load_seed, set_path

DATA = Path(__file__).resolve().parents[1] / "data"
RUNBOOK = DATA / "manifests" / "runbook"
GOOD, BAD = RUNBOOK / "good-rev14.yaml", RUNBOOK / "bad-rev15.yaml"
POLICY = "policies/llama-8b.yaml"


def seed_revision_14() -> dict:
    seed, _ = load_seed("runbook")
    entry = seed["deployments"][0]
    manifest = copy.deepcopy(entry["manifest"])
    for rev in entry["revisions"]:
        for path, value in rev["set"].items():
            set_path(manifest, path, value, "seed")
    return manifest


def test_the_good_file_is_the_seeds_revision_14():
    assert yaml.safe_load(GOOD.read_text()) == seed_revision_14()


def test_the_bad_file_is_the_incidents_revision_15():
    dep = seed_revision_14()
    bad_revision(dep)
    assert yaml.safe_load(BAD.read_text()) == dep


def test_good_revision_passes(cli):
    got = cli("check", "-f", str(GOOD), "--policy", POLICY)
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.splitlines()[0].startswith(f"ok    {GOOD}: Deployment/llm/llama-8b container vllm — fits on "
                                                 "NVIDIA-L40S")
    assert got.stdout.splitlines()[-1] == "checked 1 vLLM workload(s) in 1 file(s): 1 passed, 0 failed"


def test_bad_revision_fails_naming_max_model_len_and_the_l4(cli):
    got = cli("check", "-f", str(BAD), "--policy", POLICY)
    assert got.returncode == 1, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0] == f"FAIL  {BAD}: Deployment/llm/llama-8b container vllm (policy llama-8b)"
    assert lines[1].startswith("  start [error]: predicted max_len_exceeds_kv on NVIDIA-L4 ")
    assert "  max-model-len [error]: --max-model-len is not set: the model's default context length applies" in lines
    fix = next(ln for ln in lines if ln.startswith("  smallest fix (planner): "))
    assert fix.startswith("  smallest fix (planner): --max-model-len ") and "predicted fits" in fix
    assert lines[-1] == "checked 1 vLLM workload(s) in 1 file(s): 0 passed, 1 failed"


def test_stdin_as_helm_template_output_ignores_everything_but_vllm(cli):
    """`helm template ... | vllm-remedy check -f -`: a Service, a ConfigMap and a web Deployment around vLLM."""
    stream = "\n".join([
        "---", "# Source: llm/templates/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: llama-8b, namespace: llm}\n"
        "spec: {selector: {app: llama-8b}, ports: [{port: 80, targetPort: 8000}]}",
        "---", "# Source: llm/templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: llama-8b-chat-template, namespace: llm}\n"
        "data: {template.jinja: '{{ messages }}'}",
        "---", "# Source: llm/templates/gateway.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gateway, namespace: llm}\nspec:\n  template:\n"
        "    spec:\n      containers:\n        - {name: nginx, image: 'nginx:1.27', args: ['-g', 'daemon off;']}",
        "---", "# Source: llm/templates/deployment.yaml", GOOD.read_text(), "---",
    ])
    got = cli("check", "-f", "-", "--policy", POLICY, "-o", "json", stdin=stream)
    assert got.returncode == 0, got.stdout + got.stderr
    doc = json.loads(got.stdout)
    assert [(i["file"], i["kind"], i["name"], i["container"], i["status"]) for i in doc["items"]] == [
        ("<stdin>", "Deployment", "llama-8b", "vllm", "pass")]
    bad = cli("check", "-f", "-", "--policy", POLICY, stdin=stream.replace(GOOD.read_text(), BAD.read_text()))
    assert bad.returncode == 1 and bad.stdout.startswith("FAIL  <stdin>: Deployment/llm/llama-8b container vllm")


def test_json_is_the_projects_envelope_with_each_finding(cli):
    got = cli("check", "-f", str(GOOD), str(BAD), "--policy", POLICY, "-o", "json")
    assert got.returncode == 1, got.stderr
    doc = json.loads(got.stdout)
    assert (doc["apiVersion"], doc["kind"]) == ("vllm-remedy.io/v1alpha1", "CheckReport")
    assert doc["summary"] == {"workloads": 2, "passed": 1, "failed": 1, "findings": len(doc["items"][1]["findings"])}
    good, bad = doc["items"]
    assert (good["file"], good["status"], good["findings"], good["prediction"]["outcome"]) == (
        str(GOOD), "pass", [], "fits")
    assert (bad["file"], bad["namespace"], bad["name"], bad["container"], bad["status"]) == (
        str(BAD), "llm", "llama-8b", "vllm", "fail")
    start = next(f for f in bad["findings"] if f["check"] == "start")
    assert start["severity"] == "error" and "NVIDIA-L4" in start["reason"]
    assert "max-model-len" in bad["fix"]["set"] and bad["fix"]["prediction"]["outcome"] == "fits"
    assert bad["prediction"]["estimate"]["max_model_len"] == 131072


def test_junit_is_one_testcase_per_workload_with_failures(cli):
    got = cli("check", "-f", str(GOOD), str(BAD), "--policy", POLICY, "-o", "junit")
    assert got.returncode == 1, got.stderr
    assert got.stdout.startswith("<?xml version='1.0' encoding='utf-8'?>\n<testsuites ")
    root = ET.fromstring(got.stdout.split("\n", 1)[1])
    (suite,) = root.findall("testsuite")
    assert (root.get("tests"), root.get("failures"), suite.get("tests"), suite.get("failures")) == ("2", "1", "2", "1")
    good, bad = suite.findall("testcase")
    assert (good.get("classname"), good.get("name")) == (str(GOOD), "Deployment/llm/llama-8b container vllm")
    assert good.find("failure") is None
    failure = bad.find("failure")
    assert failure is not None and failure.get("type") == "start"
    assert failure.get("message", "").startswith("start: predicted max_len_exceeds_kv on NVIDIA-L4")
    assert "--max-model-len" in (failure.text or "") and "smallest fix (planner)" in (failure.text or "")


def test_junit_keeps_a_passing_workloads_notes(cli, tmp_path):
    """An image newer than any release read passes with a note that its rules are extrapolated: text and JSON say
    so, and junit's system-out must too (a CI job's log is all it gets; hostile review 9, finding 10)."""
    newer = tmp_path / "newer.yaml"
    newer.write_text(GOOD.read_text().replace("vllm/vllm-openai:v0.8.5", "vllm/vllm-openai:v0.99.0"))
    got = cli("check", "-f", str(newer), "-o", "junit")  # the default policy: no known-good units to match
    root = ET.fromstring(got.stdout.split("\n", 1)[1])
    (case,) = root.iter("testcase")
    assert case.find("failure") is None, got.stdout
    out = case.find("system-out")
    assert out is not None and "note:" in (out.text or "") and "extrapolated" in (out.text or ""), got.stdout


def test_junit_stays_well_formed_xml_for_names_with_control_characters(cli, tmp_path):
    """XML 1.0 cannot hold most control characters at all (etree writes them raw): they are escaped instead."""
    doc = yaml.safe_load(BAD.read_text())
    doc["metadata"]["name"] = "llama\x07-8b"
    bad = tmp_path / "rev\x1b[31m15.yaml"
    bad.write_text(yaml.safe_dump(doc))
    got = cli("check", "-f", str(bad), "--policy", POLICY, "-o", "junit")
    assert got.returncode == 1, got.stderr
    (case,) = ET.fromstring(got.stdout.split("\n", 1)[1]).iter("testcase")
    assert case.get("classname") == str(tmp_path / "rev\\x1b[31m15.yaml")
    assert case.get("name") == "Deployment/llm/llama\\x07-8b container vllm"


def test_directories_recurse_over_manifest_files_only(cli, tmp_path):
    (tmp_path / "apps" / "llm").mkdir(parents=True)
    (tmp_path / "apps" / "llm" / "deploy.yml").write_text(BAD.read_text())
    (tmp_path / "apps" / "good.json").write_text(json.dumps(yaml.safe_load(GOOD.read_text())))
    (tmp_path / "README.md").write_text("kind: Deployment\n: not yaml [")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "junk.yaml").write_text("{{ not: yaml")
    got = cli("check", "-f", str(tmp_path), "--policy", POLICY, "-o", "json")
    assert got.returncode == 1, got.stderr
    assert [(Path(i["file"]).name, i["status"]) for i in json.loads(got.stdout)["items"]] == [
        ("good.json", "pass"), ("deploy.yml", "fail")]


def test_policy_directory_gives_each_workload_its_narrowest_policy(cli):
    got = cli("check", "-f", str(GOOD), "--policy", "policies", "-o", "json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["items"][0]["policy"] == "llama-8b"


def test_real_log_a_24_gb_card_cannot_hold_29000_tokens_of_llama_8b(cli, tmp_path):
    """tests/data/logs/v0.6.4_rtx3090_llama8b_29k_max_len.log (vLLM issue 10517): vLLM 0.6.4 on an RTX 3090 with
    --max-model-len 29000 crashed, its KV cache holding 23,648 tokens. check must fail it and fix it below that."""
    text = GOOD.read_text().replace("vllm/vllm-openai:v0.8.5", "vllm/vllm-openai:v0.6.4").replace(
        "NVIDIA-L40S", "NVIDIA-GeForce-RTX-3090").replace('"16384"', '"29000"')
    path = tmp_path / "rtx3090.yaml"
    path.write_text(text)
    got = cli("check", "-f", str(path), "-o", "json")
    assert got.returncode == 1, got.stderr
    (item,) = json.loads(got.stdout)["items"]
    start = next(f for f in item["findings"] if f["check"] == "start")
    assert "max_len_exceeds_kv" in start["reason"]
    assert int(item["fix"]["set"]["max-model-len"]) <= 23648


def test_no_vllm_workload_passes(cli, tmp_path):
    path = tmp_path / "svc.yaml"
    path.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n")
    got = cli("check", "-f", str(path))
    assert (got.returncode, got.stdout) == (0, "no vLLM workload found in 1 file(s)\n")


@pytest.mark.parametrize(("setup", "message"), [
    (lambda d: None, "{d}/missing.yaml: cannot read: No such file or directory"),
    (lambda d: (d / "bad.yaml").write_text("kind: Deployment\nspec: [unclosed\n"),
     "{d}/bad.yaml: not valid YAML at line 3: expected ',' or ']', but got '<stream end>'"),
    (lambda d: (d / "bomb.yaml").write_text(alias_bomb()),
     "{d}/bomb.yaml: refused: YAML aliases expand to more than 100000 extra nodes (alias bomb?)"),
    (lambda d: (d / "huge.yaml").write_text("#" * (16 * 1024 * 1024 + 1)),
     "{d}/huge.yaml: refused: larger than 16 MiB"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_printed(cli, tmp_path, setup, message):
    setup(tmp_path)
    name = message.split(":")[0].format(d=tmp_path)
    got = cli("check", "-f", str(GOOD), name)
    assert (got.returncode, got.stdout, got.stderr) == (2, "", f"vllm-remedy: error: {message.format(d=tmp_path)}\n")


@pytest.mark.parametrize("name", sorted(hostile_inputs()))
def test_hostile_yaml_is_one_line_exit_2(cli, tmp_path, name):
    text, refusal = hostile_inputs()[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    got = cli("check", "-f", str(GOOD), str(path))
    assert (got.returncode, got.stdout, got.stderr) == (2, "", f"vllm-remedy: error: {path}: refused: {refusal}\n")


@pytest.mark.parametrize("name", ["brackets", "nested-block-map", "long-integer", "many-aliases"])
def test_hostile_policy_is_one_line_exit_2(cli, tmp_path, name):
    text, refusal = hostile_inputs()[name]
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    got = cli("check", "-f", str(GOOD), "--policy", str(path))
    assert (got.returncode, got.stdout, got.stderr) == (2, "", f"vllm-remedy: error: {path}: refused: {refusal}\n")


def test_unknown_policy_is_bad_input(cli, tmp_path):
    got = cli("check", "-f", str(GOOD), "--policy", str(tmp_path / "nope.yaml"))
    assert (got.returncode, got.stdout, got.stderr) == (
        2, "", f"vllm-remedy: error: {tmp_path}/nope.yaml: no such policy file or directory\n")


def test_no_file_is_bad_input(cli):
    got = cli("check", "--policy", POLICY)
    assert (got.returncode, got.stdout, got.stderr) == (
        2, "", "vllm-remedy: error: no file to check: -f FILE... (a directory, or - for stdin)\n")


def test_a_model_outside_the_catalog_is_predicted_from_the_policys_config_file(cli, tmp_path):
    """Offline with an empty Hugging Face cache the model is unknown, saying why; the policy's model_config.path
    (relative to the policy file) gives check its prediction."""
    from fixtures.hf_hub_server import SMOLLM2_CONFIG

    dep = seed_revision_14()
    model = "acme-corp/SmolLM2-1.7B-FineTune"
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    args[0] = model
    args[args.index("--max-model-len") + 1] = "8192"  # SmolLM2's own maximum (16384 is refused: max_len_exceeds_model)
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(yaml.safe_dump(dep))
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "smollm.json").write_text(json.dumps(SMOLLM2_CONFIG))
    target = f"extends: {Path(POLICY).resolve()}\ntarget: {{models: [{model}]}}\nknown_good: []\n"
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(target)
    got = cli("check", "-f", str(manifest), "--policy", str(unknown), "-o", "json")
    findings = [f for i in json.loads(got.stdout)["items"] for f in i["findings"]]
    revision = dep["spec"]["template"]["spec"]["containers"][0]["args"][2]
    assert [(f["check"], f["reason"]) for f in findings] == [("model", (
        f"cannot predict: model {model} at revision {revision}: not in the catalog nor the local Hugging Face cache, "
        "and HF_HUB_OFFLINE is set"))], findings
    named = tmp_path / "named.yaml"
    named.write_text(target + "model_config: {path: configs/smollm.json}\n")
    got = cli("check", "-f", str(manifest), "--policy", str(named))
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.splitlines()[0].startswith(f"ok    {manifest}: Deployment/llm/llama-8b container vllm — fits on "
                                                 "NVIDIA-L40S")
