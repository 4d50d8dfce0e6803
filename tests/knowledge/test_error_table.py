"""The table of error messages (envdoctor/knowledge/errors.csv): every row well-formed and sourced, every
finding it names a real check, and the messages users paste into issue threads classified by it."""

from __future__ import annotations

import re

import pytest

from envdoctor.checks.registry import load_checks
from envdoctor.failures import classify_exception, classify_message
from envdoctor.knowledge.errors import known_errors, matching
from conftest import REPO

NOTE = REPO / "docs" / "knowledge" / "error-messages.md"

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
    ('  File "/usr/lib/python3.10/os.py", line 680, in __getitem__\n    raise KeyError(key) from None\nKeyError: \'MASTER_ADDR\'', "environment-variable-unset", "MASTER_ADDR"),
]


def test_every_row_is_well_formed_and_sourced():
    rows = known_errors()
    assert len(rows) >= 250
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


# Messages copied from the issue threads where users hit them (not the patterns), with the thread, the
# kind each must get and what it must name (None: not checked).
THREADS = [
    ("https://github.com/mozilla/translations/issues/1167", "[train] [nvidia-smi(stdout)] Failed to initialize NVML: Driver/library version mismatch", "nvml-driver-mismatch", None),
    ("https://github.com/NVIDIA/nvidia-docker/issues/1671", "root@098b49afe624:/# nvidia-smi \nFailed to initialize NVML: Unknown Error", "nvml-unknown-error", None),
    ("https://github.com/NVIDIA/nvidia-docker/issues/988", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure\n > that the latest NVIDIA driver is installed and running.", "nvidia-smi-no-driver", None),
    ("https://github.com/NVIDIA/nvidia-docker/issues/1034", 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].', "container-no-gpu-driver", None),
    ("https://github.com/NVIDIA/nvidia-docker/issues/1629", "container init caused: Running hook #0:: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.", "container-nvml", None),
    ("https://github.com/OpenTalker/SadTalker/issues/323", "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file or directory\nPlease make sure libcudnn_cnn_infer.so.8 is in your library path!", "libcuda-missing", None),
    ("https://github.com/jianchang512/stt/issues/76", "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory", "cudnn-library-load", "libcudnn_ops_infer.so.8"),
    ("https://github.com/InternRobotics/HIMLoco/issues/14", "RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)", "nvrtc-arch", None),
    ("https://github.com/facebookresearch/pytorchvideo/issues/271", "    import torchvision.transforms.functional_tensor as F_t\nModuleNotFoundError: No module named 'torchvision.transforms.functional_tensor'", "torchvision-functional-tensor", None),
    ("https://github.com/protocolbuffers/protobuf/issues/10064", "TypeError: Descriptors cannot not be created directly.\nIf this call came from a _pb2.py file, your generated code is out of date and must be regenerated with protoc >= 3.19.0.", "protobuf-descriptors", None),
    ("https://github.com/pypa/pip/issues/12358", "AttributeError: module 'pkgutil' has no attribute 'ImpImporter'. Did you mean: 'zipimporter'?", "pkgutil-impimporter", None),
    ("https://github.com/pytorch/pytorch/issues/69894", "    LooseVersion = distutils.version.LooseVersion\nAttributeError: module 'distutils' has no attribute 'version'", "distutils-version", None),
    ("https://github.com/stanford-futuredata/ColBERT/issues/350", "    from pkg_resources import packaging  # type: ignore[attr-defined]\nImportError: cannot import name 'packaging' from 'pkg_resources'", "pkg-resources-packaging", None),
    ("https://github.com/torchpipe/torchpipe/pull/62", "ModuleNotFoundError: No module named 'pkg_resources'", "pkg-resources-missing", None),
    ("https://github.com/open-mmlab/mmocr/issues/90", "ImportError: libGL.so.1: cannot open shared object file: No such file or directory", "opencv-system-libs", "libGL.so.1"),
    ("https://github.com/rusty1s/pytorch_cluster/issues/100", "OSError: ~/miniconda3/envs/py38/lib/python3.8/site-packages/torch_cluster/_grid_cuda.so: undefined symbol: _ZNK3c104Type14isSubtypeOfExtESt10shared_ptrIS0_EPSo", "torch-extension-abi", "_ZNK3c104Type14isSubtypeOfExtESt10shared_ptrIS0_EPSo"),
    ("https://github.com/rusty1s/pytorch_sparse/issues/29", "miniconda3/lib/python3.6/site-packages/torch_sparse/unique_cuda.cpython-36m-x86_64-linux-gnu.so: undefined symbol: _ZN3c106Device8validateEv", "torch-extension-abi", None),
    ("https://github.com/pytorch/pytorch/issues/148411", "ImportError: /opt/pyenv/lib/python3.12/site-packages/nvfuser/_C.cpython-312-x86_64-linux-gnu.so: undefined symbol: _ZN4c10d8TCPStoreC1ESsRKNS_15TCPStoreOptionsE", "torch-extension-abi", None),
    ("https://github.com/DLR-RM/stable-baselines3/issues/171", '    deserialized_object = cloudpickle.loads(base64_object)\nTypeError: an integer is required (got type bytes)', "code-integer-required", None),
    ("https://github.com/pytorch/ort/issues/102", "Error: mkl-service + Intel(R) MKL: MKL_THREADING_LAYER=INTEL is incompatible with libgomp.so.1 library.\n\tTry to import numpy first or set the threading layer accordingly. Set MKL_SERVICE_FORCE_INTEL to force it.", "mkl-threading-layer", None),
    ("https://github.com/nextflow-io/nextflow/issues/5932", "slurmstepd: error: Detected 1 oom_kill event in StepId=11300781.0. Some of the step tasks have been OOM Killed.", "slurm-oom", None),
    ("https://github.com/lanl/PyBNF/issues/118", "slurmstepd: error: Detected 2 oom-kill event(s) in step 3756240.batch cgroup.", "slurm-oom", None),
    ("https://github.com/equinor/ert/issues/7797", "[havb@be-lx139213:~]$ perl -wE 'my @xs; for (1..2**20) { push @xs, q{a} x 2**20 }; say scalar @xs;'\nKilled", "shell-killed", None),
    ("https://github.com/ansible/ansible/issues/13830", "    sl = self._semlock = _multiprocessing.SemLock(kind, value, maxvalue)\nOSError: [Errno 13] Permission denied", "shm-permission", None),
    ("https://github.com/yadayada/acd_cli/issues/535", '    SemLock.__init__(self, SEMAPHORE, 1, 1, ctx=ctx)\n  File "/usr/lib64/python3.4/multiprocessing/synchronize.py", line 60, in __init__\n    unlink_now)\nPermissionError: [Errno 13] Permission denied', "shm-permission", None),
    ("https://github.com/VITA-Group/SLaK/issues/18", "from torch._six import inf\nModuleNotFoundError: No module named 'torch._six'", "torch-six", None),
    ("https://github.com/helpshift/pypiprivate/issues/15", "from markupsafe import Markup, escape, soft_unicode\nImportError: cannot import name 'soft_unicode' from 'markupsafe'", "markupsafe-soft-unicode", None),
    ("https://github.com/TUMcps/human-robot-gym/issues/5", "ERROR: GLEW initalization error: Missing GL version\n\nPress Enter to exit ...", "glew-missing-gl", None),
    ("https://github.com/openai/mujoco-py/issues/545", "ERROR: GLEW initialization error: Missing GL version", "glew-missing-gl", None),
    ("https://github.com/maudzung/SFA3D/issues/82", "TypeError: Descriptors cannot not be created directly.", "protobuf-descriptors", None),
]


@pytest.mark.parametrize("url, message, kind, named", THREADS, ids=[t[0].split("github.com/")[1] for t in THREADS])
def test_a_message_from_an_issue_thread_is_classified_by_its_row(url, message, kind, named):
    row = matching(message)
    assert row is not None and row.kind == kind, (url, row and row.kind)
    if named is not None:
        assert row.named(message) == named


@pytest.mark.parametrize("before, message, kind", [
    ("ERROR: Unexpected segmentation fault encountered in worker.", "RuntimeError: DataLoader worker (pid(s) 6739) exited unexpectedly", "worker-segfault"),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).", "RuntimeError: DataLoader worker (pid(s) 81) exited unexpectedly", "shm-bus-error"),
    ("/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.", "RuntimeError: CUDA error: device-side assert triggered", "cuda-index-assert"),
    ("", "RuntimeError: DataLoader worker (pid(s) 6739) exited unexpectedly", "worker-died"),
    ('  File "/usr/lib/python3.12/subprocess.py", line 1955, in _execute_child\n    raise child_exception_type(errno_num, err_msg, err_filename)', "FileNotFoundError: [Errno 2] No such file or directory: 'ffmpeg'", "command-not-found"),
    ('  File "/srv/train.py", line 9, in <module>\n    open(path)', "FileNotFoundError: [Errno 2] No such file or directory: 'ffmpeg'", "file-not-found"),
    ("ERROR: Unexpected segmentation fault encountered in worker.", "ValueError: not enough values to unpack (expected 5, got 4)", "gym-api-old-step"),
])
def test_a_message_printed_before_the_one_it_explains_is_the_cause(before, message, kind):
    """Only for the kinds its row says it explains: an unrelated exception keeps its own."""
    assert classify_message(message, f"{before}\n{message}", message).kind == kind


WORKER_DIED = """Process ForkServerProcess-2:
Process ForkServerProcess-1:
Traceback (most recent call last):
Traceback (most recent call last):
  File "/usr/lib/python3.11/multiprocessing/process.py", line 314, in _bootstrap
    self.run()
  File "/srv/env.py", line 9, in step
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB
  File "/usr/lib/python3.11/multiprocessing/process.py", line 314, in _bootstrap
RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB
Traceback (most recent call last):
  File "/srv/train.py", line 13, in <module>
EOFError"""


# A forkserver worker that re-imported a script with no main guard: it died before "Process ...:" was printed.
BOOTSTRAP = """Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/usr/lib/python3.11/multiprocessing/forkserver.py", line 274, in main
    code = _serve_one(child_r, fds,
  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 140, in _check_not_importing_main
    raise RuntimeError('''
RuntimeError: 
        An attempt has been made to start a new process before the
        current process has finished its bootstrapping phase.

Traceback (most recent call last):
  File "/srv/train.py", line 4, in <module>
ConnectionResetError: [Errno 104] Connection reset by peer"""
RESET = {"type": "ConnectionResetError", "message": "[Errno 104] Connection reset by peer"}


EOF_ = {"type": "EOFError", "message": ""}
PIPE = {"type": "BrokenPipeError", "message": "[Errno 32] Broken pipe"}
OWN = {"type": "ValueError", "message": "bad shape"}
BAD_ACTION = WORKER_DIED.replace("CUDA out of memory", "bad action")


@pytest.mark.parametrize("raised, output, fatal_error, kind, worker", [
    (EOF_, WORKER_DIED, None, "cuda-out-of-memory", "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"),
    (PIPE, BAD_ACTION, None, "worker-error", "RuntimeError: bad action. Tried to allocate 2.00 GiB"),
    (RESET, BOOTSTRAP, None, "spawn-bootstrap", "RuntimeError: An attempt has been made to start a new process before the"),
    (EOF_, "", "Segmentation fault", "worker-crash", "Fatal Python error: Segmentation fault"),
    (PIPE, "", "Fatal Python error: Aborted", "worker-crash", "Fatal Python error: Aborted"),  # two dumps written at once
    ({"type": "EOFError", "message": "EOF when reading a line"}, "Traceback (most recent call last):\n  File \"/srv/ask.py\", line 1\nEOFError: EOF when reading a line", None, "error", ""),
    (EOF_, "", None, "error", ""),
    (EOF_, "", "init_fs_encoding: failed to get the Python codec", "error", ""),  # not a signal
    (OWN, BAD_ACTION, None, "error", ""),  # its own exception, not a lost pipe
    (OWN, "", "Segmentation fault", "error", ""),
])
def test_a_lost_pipe_is_read_by_what_its_worker_left(raised, output, fatal_error, kind, worker):
    """Only the main process's lost pipe (EOFError, BrokenPipeError, ...) is read as its worker's death:
    the worker's traceback, classified, or the fatal signal faulthandler recorded; an input() at end of
    file, or an exception of the process's own, stays what it is."""
    failure = classify_exception(raised, output, fatal_error)
    assert (failure.kind, failure.worker) == (kind, worker)
    if worker:
        assert failure.first_line == worker
