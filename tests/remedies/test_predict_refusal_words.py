"""A prediction's note names the refusal its estimate decided (``Estimate.refusal``): where the scheduler config
refuses the batch and the card would also refuse bfloat16, the start is ``config_refused`` (the engine config is built
before any worker checks the card's dtype, as the rehearsal pod orders them too), so the note must say the batch, not
the dtype the start never reaches."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fixtures.vllm_deployment import LLAMA, manifest
from vllm_remedy.remedies.predict import predict_template

WORDS = "max_num_batched_tokens (8192) is smaller than max_model_len (16384)."


@pytest.mark.parametrize(("tag", "exception"), [("v0.6.3", "ValueError: "),
                                                ("v0.34.0", "ValidationError for SchedulerConfig: ")])
def test_a_batch_refused_on_a_bfloat16_less_card_names_the_batch(tmp_path: Path, tag: str, exception: str) -> None:
    args = ["--max-model-len", "16384", "--max-num-batched-tokens", "8192"]
    if tag != "v0.6.3":
        args.append("--no-enable-chunked-prefill")
    path = manifest(tmp_path, args, gpu="Tesla-T4", image=f"vllm/vllm-openai:{tag}", model=LLAMA)
    got = predict_template(yaml.safe_load(Path(path).read_text())["spec"]["template"])
    assert got.outcome == "config_refused", got
    assert got.note.startswith(f"vLLM refuses the start at config time: {exception}{WORDS}"), got.note
    assert "bfloat16" not in got.note, got.note
