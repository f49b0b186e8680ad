"""The estimator's inputs as a calibration case states them (``tests/data/calibration/*.yaml``).

The accuracy test and ``bench/estimate_accuracy.py`` must hand the estimator exactly the same inputs, or the
test's bars and the published table would measure different things; so the mapping from a case to an
``Estimate`` is written once, here. Pure: callers read and parse the YAML and pass the dict in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_remedy.vllm import catalog
from vllm_remedy.vllm.memory.core import Estimate, estimate
from vllm_remedy.vllm.memory.settings import EngineSettings


def estimate_case(case: Mapping[str, Any]) -> Estimate:
    """Estimate a case from what its log shows: model (catalog id or inline HF config), GPU (and the total
    the log reports, when it differs from the catalog's), vLLM version, flags and other processes' GiB."""
    if "model_config" in case:
        model = catalog.ModelSpec.from_hf_config(case["model_config"], case["model"], case.get("model_params_b"))
    else:
        model = catalog.model(case["model"])
    gpu = catalog.gpu(case["gpu"])
    if case.get("gpu_memory_gib"):
        gpu = gpu.with_total(float(case["gpu_memory_gib"]))
    flags = {k: str(v) for k, v in case["flags"].items()}
    flags["other-process-gib"] = str(case.get("other_process_gib", 0.0))
    return estimate(model, gpu, EngineSettings.from_flags(flags, str(case["vllm_version"])))
