"""`--model-config` (and a policy's model_config.path, read the same way) is read only from a regular file."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

ARGS = ("--gpu", "NVIDIA-L4", "--max-model-len", "8192", "--vllm-version", "0.19.0")


def test_a_model_config_that_is_not_a_regular_file_is_one_line(tmp_path):
    """A FIFO blocked the read forever (a device would never end): refused before it is opened."""
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    got = subprocess.run([sys.executable, "-m", "vllm_remedy", "estimate", "--model-config", str(fifo), *ARGS],
                         capture_output=True, text=True, cwd=ROOT, timeout=20)
    assert (got.returncode, got.stderr) == (2, f"vllm-remedy: error: {fifo}: not a regular file (a config.json is "
                                               "read from a file)\n")
