"""VLLM_MLA_DISABLE: the environment variable that turns DeepSeek-style MLA off, so the cache holds full K/V per head.

envs.py@0.7.1 defines it, ``bool(int(os.getenv("VLLM_MLA_DISABLE", "0")))``; ``ModelConfig.use_mla`` reads it from
0.7.1 to 0.34.0 (config.py@0.7.1, 0.7.3, 0.8.5, config/model.py@0.11.0, 0.20.0, 0.30.0, 0.34.0; what the cache then
holds: ``memory.mla_release``). The envs.py of the later releases was not in the extracts read: they are taken to
parse it as 0.7.1 does. Releases before 0.7.1 have no MLA and do not read it.

Through 0.29 ``use_mla`` reads the variable only for an MLA model (``is_deepseek_mla and not envs.VLLM_MLA_DISABLE``);
0.30 reads it first for every model (``if envs.VLLM_MLA_DISABLE: return False``), so a text ``int()`` refuses would
raise there for any model. Such a text is vLLM's refusal (``env_refusal.Refusal``, ``config_refused`` by the env, as
VLLM_USE_V1's): ``use_mla`` reads ``envs.VLLM_MLA_DISABLE``, ``bool(int(os.getenv(...)))`` (envs.py@0.10.0 l.773,
@0.30.0 l.1418), and ``get_head_size`` calls ``use_mla`` for the model config (config.py@0.7.2 l.832, @0.8.5 l.1077).
A value that cannot be read (a Secret, a ConfigMap outside the manifests) is "cannot predict" for an MLA model on a
release that reads it.
"""

from __future__ import annotations

from vllm_remedy.vllm.env_refusal import Refusal

ENV = "VLLM_MLA_DISABLE"
INPUT = "vllm-mla-disable"  # the memory model's input: the variable's text in vLLM's process (absent: unset)
UNREADABLE = "vllm-mla-disable-unreadable"  # why the pod's value cannot be read (``pod_env.read``)
READ_SINCE = (0, 7, 1)  # envs.py@0.7.1
READ_FOR_ALL_SINCE = (0, 30, 0)  # config/model.py@0.30.0: read before the model is looked at


def disabled(version: tuple[int, int, int], mla_model: bool, value: str | None,
             unreadable: str | None = None) -> tuple[bool, str | None]:
    """Whether VLLM_MLA_DISABLE turns MLA off on this release for this model (``mla_model``: the config has
    ``kv_lora_rank``), and why the start cannot be predicted when its value makes it so."""
    if version < READ_SINCE or (not mla_model and version < READ_FOR_ALL_SINCE):
        return False, None
    if unreadable is not None:
        if not mla_model:
            return False, None
        return False, f"cannot predict {ENV}: it decides whether MLA runs and its value cannot be read: {unreadable}"
    if value is None:
        return False, None
    try:
        number = int(value)
    except ValueError:
        return False, Refusal(
            f"{ENV}={value!r}: vLLM {'.'.join(map(str, version))} reads it as bool(int(value)) (vllm/envs.py) in "
            f"ModelConfig.use_mla, which raises \"ValueError: invalid literal for int() with base 10: {value!r}\", so "
            "vLLM refuses the start before any memory is sized; set it to 0 or 1, or unset it")
    return bool(number) and mla_model, None
