"""The GPU memory reader `run` starts beside the command: NVML in an isolated child, nvidia-smi's own
polling loop where NVML cannot answer. The device node is presented with ENVDOCTOR_ROOT; on a machine
without an NVIDIA driver library NVML's child says why, and a fake nvidia-smi gives the samples."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from conftest import eventually, write_host_root
from envdoctor.capture.gpu import MIB, GpuSampler
from envdoctor.collect import gpu

ROWS = ["2, 0, NVIDIA H100 80GB HBM3, 1024, 81559", "2, 1, NVIDIA H100 80GB HBM3, 2048, 81559"]


def sampled(monkeypatch, tmp_path: Path, path: str) -> dict:
    """The sampler's facts for a machine with an NVIDIA device node and `path` as PATH, once its reader
    has ended (or, where NVML answers, has taken a sample)."""
    monkeypatch.setenv("ENVDOCTOR_ROOT", str(write_host_root(tmp_path / "root", {"/dev/nvidiactl": ""})))
    monkeypatch.setenv("PATH", path)
    sampler = GpuSampler(time.monotonic(), 0.1)
    sampler.start()
    eventually(lambda: not sampler.thread.is_alive() or sampler.timeline.samples, "the GPU reader to end or sample")
    sampler.stop()
    return sampler.facts()


def fake_nvidia_smi(folder: Path, rounds: int) -> str:
    """An nvidia-smi whose polling loop prints `rounds` rounds of two GPUs, then ends."""
    folder.mkdir()
    script = folder / "nvidia-smi"
    lines = "\n".join(ROWS * rounds)
    script.write_text(f"#!/bin/sh\ncat <<'END'\n{lines}\nEND\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return f"{folder}:/usr/bin:/bin"


def nvml_answers() -> bool:
    """Whether this machine has a driver NVML can talk to (then the fallback is never reached)."""
    return "reason" not in gpu.query_nvml()


def test_the_nvml_child_imports_pynvml_and_samples_or_says_why_nvml_cannot(monkeypatch, tmp_path):
    facts = sampled(monkeypatch, tmp_path, "/usr/bin:/bin")
    if nvml_answers():
        assert facts["source"] == "nvml" and facts["devices"] and facts["samples"], facts
    else:
        assert facts["source"] is None and facts["samples"] == []
        assert any(p.startswith("nvml: NVMLError") for p in facts["problems"]), facts["problems"]  # not "No module named 'pynvml'"


def test_nvidia_smi_samples_every_gpu_when_nvml_cannot(monkeypatch, tmp_path):
    if nvml_answers():
        pytest.skip("NVML answers on this machine: the nvidia-smi fallback is not reached")
    facts = sampled(monkeypatch, tmp_path, fake_nvidia_smi(tmp_path / "bin", rounds=3))
    assert facts["source"] == "nvidia-smi"
    assert facts["devices"] == [{"index": i, "name": "NVIDIA H100 80GB HBM3", "total_bytes": 81559 * MIB} for i in (0, 1)]
    assert [s["gpu_used_bytes"] for s in facts["samples"]] == [[1024 * MIB, 2048 * MIB]] * 3
