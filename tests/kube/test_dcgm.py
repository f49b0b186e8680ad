"""The DCGM exporter's framebuffer samples: label spellings across exporter releases, pod mapping, bad text."""

from __future__ import annotations

import pytest

from vllm_remedy.kube.dcgm import GpuFramebuffer, framebuffers

# dcgm-exporter's README quick-start prints label sets with a space after each comma; the 4.x renderer does not.
README_STYLE = """\
# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 22487
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 0
"""

MAPPED = """\
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a",pci_bus_id="00000000:00:1E.0",device="nvidia0",modelName="NVIDIA L4",\
Hostname="nvidia-dcgm-exporter-x",DCGM_FI_DRIVER_VERSION="570.172.08",container="vllm",namespace="llm",\
pod="llama-8b-1"} 1740
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-a",pci_bus_id="00000000:00:1E.0",device="nvidia0",modelName="NVIDIA L4",\
Hostname="nvidia-dcgm-exporter-x",DCGM_FI_DRIVER_VERSION="570.172.08",container="vllm",namespace="llm",\
pod="llama-8b-1"} 16343
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",pci_bus_id="00000000:00:1E.0",device="nvidia0",modelName="NVIDIA L4",\
Hostname="nvidia-dcgm-exporter-x",DCGM_FI_DRIVER_VERSION="570.172.08",container="vllm",namespace="llm",\
pod="llama-8b-1"} 6144
DCGM_FI_DEV_FB_RESERVED{gpu="0",UUID="GPU-a",pci_bus_id="00000000:00:1E.0",device="nvidia0",modelName="NVIDIA L4",\
Hostname="nvidia-dcgm-exporter-x",DCGM_FI_DRIVER_VERSION="570.172.08",container="vllm",namespace="llm",\
pod="llama-8b-1"} 547
DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-b",modelName="NVIDIA L4",hostname="n1"} 22487
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-b",modelName="NVIDIA L4",hostname="n1"} 0
"""


def test_readme_style_labels_and_an_unmapped_gpu() -> None:
    assert framebuffers(README_STYLE) == [GpuFramebuffer("0", "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", "", "",
                                                         0.0, 22487.0)]


def test_pod_mapping_reserved_memory_and_both_hostname_spellings() -> None:
    a, b = framebuffers(MAPPED)
    assert (a.gpu, a.uuid, a.model, a.hostname) == ("0", "GPU-a", "NVIDIA L4", "nvidia-dcgm-exporter-x")
    assert (a.used_mib, a.free_mib, a.reserved_mib, a.total_mib) == (6144, 16343, 547, 23034)
    assert a.pods == (("llm", "llama-8b-1", "vllm"),)
    assert (b.hostname, b.pods, b.total_mib) == ("n1", (), 22487)


def test_old_namespace_labels_and_gpus_shared_by_pods() -> None:
    text = "\n".join(f'DCGM_FI_DEV_FB_{k}{{gpu="0",uuid="GPU-c",pod_name="{p}",pod_namespace="ml",'
                     f'container_name="train"}} {v}' for k, v in (("USED", 9000), ("FREE", 13000))
                     for p in ("job-a", "job-b"))
    (gpu,) = framebuffers(text)
    assert gpu.uuid == "GPU-c" and gpu.pods == (("ml", "job-a", "train"), ("ml", "job-b", "train"))
    assert gpu.used_mib == 9000


def test_escaped_label_values_and_timestamps() -> None:
    text = ('DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-d",modelName="A \\"quoted\\" card"} 12 1718000000000\n'
            'DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-d",modelName="A \\"quoted\\" card"} 34 1718000000000\n')
    (gpu,) = framebuffers(text)
    assert gpu.model == 'A "quoted" card' and (gpu.used_mib, gpu.free_mib) == (12, 34)


def test_an_exporter_without_framebuffer_fields_yields_nothing() -> None:
    assert framebuffers('DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-e"} 3\n') == []
    assert framebuffers('DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-e"} 3\n') == []  # no FREE: total unknown


@pytest.mark.parametrize("text", ['DCGM_FI_DEV_FB_USED{gpu="0",UUID=GPU-e} 3', "<html>502 Bad Gateway</html>",
                                  'DCGM_FI_DEV_FB_USED{gpu="0"} lots'])
def test_malformed_text_raises_with_the_line(text: str) -> None:
    with pytest.raises(ValueError, match=r"DCGM|html|lots"):
        framebuffers(text)
