"""The table of error messages (envdoctor/knowledge/errors.csv): every row well-formed and sourced, every
finding it names a real check, and the messages users paste into issue threads classified by it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envdoctor.checks.registry import load_checks
from envdoctor.failures import classify_message
from envdoctor.knowledge.errors import known_errors, matching

NOTE = Path(__file__).parent.parent / "docs" / "knowledge" / "error-messages.md"

# Messages as users pasted them (the threads are the rows' sources), and the kind each must get.
PASTED = [
    ("RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your storages to the CPU.", "checkpoint-on-cuda", None),
    ("ModuleNotFoundError: No module named 'numpy._core.numeric'", "numpy-pickle", "numpy._core.numeric"),
    ("RuntimeError: DataLoader worker (pid 46794) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.", "shm-bus-error", None),
    ("RuntimeError: received 0 items of ancdata", "open-files", None),
    ("ImportError: /usr/local/lib/python3.10/dist-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12", "nvjitlink-symbol", "__nvJitLinkAddData_12_1"),
    ("ImportError: /root/anaconda3/envs/pikv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent", "mkl-ijit", None),
    ("Fatal Python error: init_fs_encoding: failed to get the Python codec of the filesystem encoding", "pythonhome", None),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver", "cuda-driver-too-old", "11040"),
    ("ValueError: not enough values to unpack (expected 5, got 4)", "gym-api-old-step", None),
    ("ValueError: too many values to unpack (expected 4)", "gym-api-new-step", None),
    ("_pickle.UnpicklingError: Weights only load failed. In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` from `False` to `True`.", "weights-only", None),
    ("ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by /opt/env/lib/libicuuc.so.73)", "libstdcxx", "GLIBCXX_3.4.30"),
    ("OSError: /opt/vendor/libgomp.so.1: version `GOMP_4.5' not found (required by /venv/torch/lib/libtorch_cpu.so)", "missing-version", "GOMP_4.5"),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).", "shm-bus-error", None),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "no-kernel-image", None),
    ("OMP: Error #15: Initializing libiomp5.so, but found libiomp5.so already initialized.", "openmp-duplicate", "libiomp5.so"),
]


def test_every_row_is_well_formed_and_sourced():
    rows = known_errors()
    assert len(rows) >= 100
    assert len({r.kind for r in rows}) == len(rows)
    for row in rows:
        assert row.cause and row.sources, row.kind
        assert all(re.match(r"https://", source) for source in row.sources), row.kind
        assert row.remedy or row.kind == "circular-import", row.kind


def test_every_finding_a_row_names_is_a_check_that_exists():
    ids = {check.id for check in load_checks()[0]}
    for row in known_errors():
        assert set(row.findings) <= ids, (row.kind, set(row.findings) - ids)


def test_the_note_lists_every_row_with_its_sources():
    note = NOTE.read_text(encoding="utf-8")
    for row in known_errors():
        assert f"| `{row.kind}` |" in note, row.kind
        assert all(f"<{source}>" in note for source in row.sources), row.kind


@pytest.mark.parametrize("message, kind, named", PASTED, ids=[p[1] for p in PASTED])
def test_a_message_users_paste_is_classified_by_its_row(message, kind, named):
    assert matching(message).kind == kind
    failure = classify_message(message, message, message[:80])
    assert failure.kind == kind and failure.known is not None
    if named is not None:
        assert failure.named == named


def test_the_message_is_read_before_the_output_around_it():
    message = "ModuleNotFoundError: No module named 'wandb'"
    output = "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040)"
    assert classify_message(message, f"{message}\n{output}", message).kind == "missing-module"
    assert classify_message("RuntimeError: worker failed", f"RuntimeError: worker failed\n{output}", "x").kind == "cuda-driver-too-old"
