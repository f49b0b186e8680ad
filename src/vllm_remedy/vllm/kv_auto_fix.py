"""The typed 16-bit ``--kv-cache-dtype`` that clears the fp8 cache ``auto`` resolves to on a checkpoint with an 8-bit
KV scheme (``kv_auto``), for a model as a release runs it: one answer for check's finding and the planner's rung.
Apart from ``kv_auto`` because it reads the release's flag choices (``cmdline.refused``), which the catalog, an
importer of ``kv_auto``, must not depend on."""

from __future__ import annotations

from vllm_remedy.vllm import dtype_support, kv_auto
from vllm_remedy.vllm.catalog import ModelSpec
from vllm_remedy.vllm.cmdline import refused
from vllm_remedy.vllm.versions import rules


def sixteen_bit_for(model: ModelSpec, dtype: str, capability: tuple[int, int] | None,
                    version: str | None) -> str | None:
    """``kv_auto.sixteen_bit`` for ``model``: its run dtype (``dtype_support.resolved``, ``--dtype`` ``dtype`` on a
    card of ``capability``) among the release's ``--kv-cache-dtype`` choices."""
    v = rules(version).version
    run = dtype_support.resolved(model.dtype, dtype, capability, version, model.model_types)
    return kv_auto.sixteen_bit(run, refused.kv_cache_dtypes(v), model.kv_quant, v)
