"""VLLM_USE_FLASHINFER_SAMPLER: whether V1's sampler warm-up runs FlashInfer's top-k/top-p kernel (no sort) instead
of PyTorch's sort (``VersionRules.sampler_sorts``), release by release.

Read from envs.py and v1/sample/ops/topk_topp_sampler.py:

- envs.py@0.8.0, 0.8.3, 0.9.2, 0.10.2, 0.11.0, 0.11.1, 0.12.0: ``bool(int(os.environ[...]))`` when set, else None;
  envs.py@0.34.0 the same, with True when unset.
- 0.8.0-0.11.0: ``elif envs.VLLM_USE_FLASHINFER_SAMPLER is not False`` ("In V1, None means True"): unset or 1 take
  FlashInfer when it imports; 0 does not.
- 0.11.1-0.20: ``if envs.VLLM_USE_FLASHINFER_SAMPLER:`` ("Users must opt in explicitly", @0.11.1, 0.12.0): only 1
  takes it. From 0.12.0, 1 on a card ``FlashInferBackend.supports_compute_capability`` refuses raises RuntimeError
  ("FlashInfer does not support compute capability X, unset VLLM_USE_FLASHINFER_SAMPLER=1"); 0.11.1 does not check.
- 0.21 on: on by default again (``versions.FLASHINFER_SAMPLER_DEFAULT_AGAIN_SINCE``); 0 turns it off ("FlashInfer
  top-p/top-k sampling disabled via VLLM_USE_FLASHINFER_SAMPLER=0"), and 1 where FlashInfer cannot run (the card, no
  FlashInfer) raises RuntimeError ("... Unset VLLM_USE_FLASHINFER_SAMPLER=1.") instead of falling back
  (``flashinfer_sampler_supported``, @0.34.0; 0.21-0.33 not read for the raise, taken to do as 0.12.0 and 0.34.0 do).

Whether FlashInfer imports stays the ``flashinfer`` input (an install fact: 1 does not install it). V0's sampler is not
sized (V0 rules have no sampler sort), so under V0 the variable changes nothing here. Left out: 0.34.0's other
fallbacks (16 or fewer SMs, a FlashInfer JIT that cannot build), which no input here describes.
"""

from __future__ import annotations

from vllm_remedy.vllm.versions import FLASHINFER_SAMPLER_DEFAULT_AGAIN_SINCE, VersionRules, flashinfer_supports

ENV = "VLLM_USE_FLASHINFER_SAMPLER"
INPUT = "flashinfer-sampler-env"  # the variable's text in vLLM's process (absent: unset)
UNREADABLE = "flashinfer-sampler-env-unreadable"  # why the pod's value cannot be read
CAPABILITY_CHECKED_SINCE = (0, 12, 0)  # 1 on a card FlashInfer does not support raises (topk_topp_sampler.py@0.12.0)


def _decide(r: VersionRules, capability: tuple[int, int] | None, installed: bool | None,
            value: str) -> tuple[bool, str | None]:
    at = f"vLLM {r.display}"
    try:
        number = int(value)
    except ValueError:
        return False, (f"cannot predict {ENV}={value!r}: {at} reads it as bool(int(value)) (vllm/envs.py), which "
                       "raises ValueError on this text when the sampler is built, so the start fails")
    if number == 0:
        return False, None
    v = r.version
    if v >= CAPABILITY_CHECKED_SINCE and capability is not None and not flashinfer_supports(r, capability):
        return False, (f"cannot predict {ENV}={value}: {at} refuses it on a card of compute capability "
                       f"{capability[0]}.{capability[1]}, which FlashInfer does not support (RuntimeError, "
                       "v1/sample/ops/topk_topp_sampler.py); unset it")
    if v >= FLASHINFER_SAMPLER_DEFAULT_AGAIN_SINCE and installed is False:
        return False, (f"cannot predict {ENV}={value}: {at} raises RuntimeError when it is set and FlashInfer is "
                       "unavailable (flashinfer_sampler_supported, v1/sample/ops/topk_topp_sampler.py); unset it")
    return bool(installed), None  # 0.8-0.11.0 and 0.21+: as unset; 0.11.1-0.20: the opt-in


def sampler(r: VersionRules, capability: tuple[int, int] | None, installed: bool | None, value: str | None,
            unreadable: str | None = None) -> tuple[bool, str | None]:
    """Whether the sampler warm-up takes FlashInfer's kernel with the variable at ``value`` (None: unset), and why
    the start cannot be predicted when the value makes it so (refused, or unreadable where 0 and 1 differ)."""
    default = bool(installed) and r.flashinfer_sampler_by_default
    if r.engine != "V1" or (value is None and unreadable is None):
        return default, None
    if unreadable is not None:
        off, on = _decide(r, capability, installed, "0"), _decide(r, capability, installed, "1")
        if off != on:
            return default, (f"cannot predict {ENV}: whether vLLM {r.display}'s sampler takes FlashInfer's kernel "
                             f"(or refuses the start) depends on it, and its value cannot be read: {unreadable}")
        return off
    return _decide(r, capability, installed, value)
