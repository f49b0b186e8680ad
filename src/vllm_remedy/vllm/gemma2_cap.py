"""Gemma 2 on vLLM 0.5.5-0.6.3: the release turns the sliding window off and caps the length at the window.

config.py@0.5.5, 0.6.0, 0.6.1, 0.6.2 and 0.6.3 (``ModelConfig.__init__``): ``if (not self.disable_sliding_window and
self.hf_text_config.model_type == "gemma2" and self.hf_text_config.sliding_window is not None)`` it warns "Gemma 2
uses sliding window attention for every odd layer, which is currently not supported by vLLM. Disabling sliding
window and capping the max length to the sliding window size" and sets ``disable_sliding_window = True``, which
``_get_and_verify_max_len`` then applies as --disable-sliding-window would (``model_len.limit``). No attention
backend is consulted. config.py@0.6.4 no longer has the block. Releases before 0.5.5 were not read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vllm_remedy.vllm.catalog import ModelSpec

CAPPED_UNTIL = (0, 6, 4)  # config.py@0.6.4 drops the rule


def forced(model: ModelSpec, version: tuple[int, int, int]) -> bool:
    """Whether the release disables the sliding window for this model (model_type gemma2 with a window): the
    config's model_type, or for a catalog entry without one its architecture's family (``hf_config.model_type``)."""
    kind = model.length.model_type if model.length is not None else ""
    kind = kind or ("gemma2" if model.architecture.startswith("Gemma2") else "")
    return version < CAPPED_UNTIL and kind == "gemma2" and model.sliding_window is not None
