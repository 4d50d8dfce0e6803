"""The pieces of `envdoctor run` that judge and draw: verdicts on recorded runs, timeline, pictures."""

from __future__ import annotations

import struct
import zlib

import pytest

from conftest import REPO, findings_by_id, run_envdoctor
from envdoctor.capture import chart
from envdoctor.capture.timeline import Timeline
from envdoctor.crash import stacks
from envdoctor.engine import Selection, judge

GIB = 1 << 30


def recorded_run(signal_name="SIGSEGV", gpu_used=(70 * GIB, 79 * GIB), output=()):
    """A run section as `envdoctor run` records it: a SIGSEGV after 10 s with an 80 GiB GPU sampled."""
    return {
        "command": ["python", "train.py"],
        "under_gdb": False,
        "duration_s": 10.0,
        "hang_timeout_s": None,
        "sample_interval_s": 0.5,
        "ending": {"kind": "signal", "returncode": -11, "exit_status": 139, "signal": 11, "signal_name": signal_name, "signal_meaning": "segmentation fault", "forwarded_signals": []},
        "python_stacks": None,
        "native_stacks": None,
        "output_tail": [{"stream": "stderr", "text": line} for line in output],
        "memory": {"samples": [{"t": 1.0, "rss_bytes": GIB, "vms_max_bytes": 2 * GIB, "cpu_percent": 100.0, "processes": 1}], "peak_rss_bytes": GIB, "peak_rss_at_s": 1.0, "address_space_limit_bytes": None, "cgroups": [], "kernel_oom_lines": []},
        "gpu": {
            "source": "nvml",
            "devices": [{"index": 0, "name": "NVIDIA H100", "total_bytes": 80 * GIB}],
            "samples": [{"t": 4.0 + i, "gpu_used_bytes": [used]} for i, used in enumerate(gpu_used)],
            "problems": [],
        },
    }


def judge_run(run):
    """The run checks' findings on a recorded run section, through the one check runner."""
    findings, runs, _, _ = judge({}, None, Selection(only=("run",)), run)
    assert runs and all(r.status.value != "crashed" for r in runs), runs
    return findings


def ids(findings):
    return [f.id for f in findings]


def test_gpu_full_just_before_a_segfault_is_likely_cuda_oom():
    findings = judge_run(recorded_run(gpu_used=(70 * GIB, 79 * GIB)))
    assert ids(findings) == ["run.crashed", "run.gpu-out-of-memory"]
    assert findings[1].title == "Likely CUDA out-of-memory surfacing as a SIGSEGV"
    assert findings[1].evidence["near_full"] == ["GPU 0 (NVIDIA H100) used 80896 MiB of 81920 MiB"]


@pytest.mark.parametrize(
    "sample, confidence",
    [
        ("h100-gpu-oom-raised.json", "confirmed"),  # torch.OutOfMemoryError after 19 allocations of 4 GiB
        ("h100-gpu-oom-native.json", "likely"),  # the GPU filled to 80879 of 81559 MiB, then a segfault with nothing said
    ],
)
def test_a_gpu_out_of_memory_recorded_on_an_h100_heads_the_diagnosis_when_judged_again(sample, confidence):
    """Real runs on an H100 (reports/samples/README.md): the GPU's own samples and the error text lead to
    the out-of-memory cause; the RSS that rose while torch loaded stays a note."""
    judged = run_envdoctor("check", "--from", str(REPO / "reports" / "samples" / sample), "--no-save", "--json", "-").json()
    assert [(cause["id"], cause["confidence"]) for cause in judged["diagnosis"]][0] == ("run.gpu-out-of-memory", confidence)
    assert all(f["severity"] == "info" for f in findings_by_id(judged).get("run.memory-growth", ()))
    assert "run.memory-growth" not in [cause["id"] for cause in judged["diagnosis"]]


def test_a_half_empty_gpu_does_not_explain_a_segfault():
    assert ids(judge_run(recorded_run(gpu_used=(40 * GIB, 41 * GIB)))) == ["run.crashed"]


def test_a_physx_allocation_failure_in_the_output_names_gpu_oom():
    line = "PxgCudaDeviceMemoryAllocator fail to allocate memory 134217728 bytes!! Result = 2"
    findings = judge_run(recorded_run(gpu_used=(1 * GIB, 1 * GIB), output=(line,)))
    assert "run.gpu-out-of-memory" in ids(findings)
    assert line in findings[-1].explanation


def test_timeline_compaction_keeps_the_peak_and_recent_resolution():
    timeline = Timeline(capacity=100)
    for i in range(1000):
        timeline.add({"t": float(i), "rss_bytes": 5000 if i == 123 else i})
    assert len(timeline.samples) <= 100
    assert timeline.peak("rss_bytes")["rss_bytes"] == 5000
    assert [s["t"] for s in timeline.samples[-10:]] == [float(i) for i in range(990, 1000)]


def test_stacks_parse_the_python_3_12_format_with_a_thread_pool_worker():
    dump = (
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f0000000001 (most recent call first):\n"
        '  File "/home/u/env/lib/python3.12/site-packages/emu/screen.py", line 40 in grab\n'
        '  File "/usr/lib/python3.12/concurrent/futures/thread.py", line 58 in run\n'
        '  File "/usr/lib/python3.12/threading.py", line 1010 in run\n'
        '  File "/usr/lib/python3.12/threading.py", line 1030 in _bootstrap\n\n'
        "Thread 0x00007f0000000002 (most recent call first):\n"
        '  File "<frozen runpy>", line 88 in _run_code\n\n'
        "Extension modules: numpy.core._multiarray_umath (total: 1)\n"
    )
    parsed = stacks.parse("some training output\n" + dump)
    crashed = stacks.crashed_thread(parsed)
    assert parsed["fatal_error"] == "Segmentation fault"
    assert crashed["kind"] == "worker" and crashed["entry"]["function"] == "grab"
    assert len(parsed["threads"]) == 2


def test_the_picture_is_a_png_of_the_drawn_size():
    png = chart.picture(recorded_run(), width=300, height=200)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", png[16:24])
    idat = png[png.index(b"IDAT") + 4 : png.index(b"IEND") - 8]
    assert (width, height) == (300, 200) and len(zlib.decompress(idat)) == 200 * (1 + 3 * 300)


def plotted_colors(png: bytes, width: int, below: int) -> set:
    """The RGB colours of the pixels under the legend row (`below` pixels from the top)."""
    idat = png[png.index(b"IDAT") + 4 : png.index(b"IEND") - 8]
    rows = zlib.decompress(idat)
    stride = 1 + 3 * width
    colors = set()
    for y in range(below, len(rows) // stride):
        row = rows[y * stride + 1 : (y + 1) * stride]
        colors.update(tuple(row[x : x + 3]) for x in range(0, len(row), 3))
    return colors


def test_the_picture_draws_each_series_even_from_a_single_sample():
    colors = plotted_colors(chart.picture(recorded_run(), width=300, height=200), 300, below=30)
    assert chart.COLORS[0] in colors  # RSS: one sample and no limit line, so only its point can put its colour there


def test_text_chart_scales_each_series_to_its_limit():
    lines = chart.text_chart(recorded_run(), width=10)
    assert lines[1].startswith("GPU0 ") and lines[1].endswith("peak 79.0 GiB of 80.0 GiB")


def exited_with(exception):
    run = recorded_run(output=("AttributeError: module 'numpy' has no attribute 'zeros'",))
    run["ending"] = {"kind": "exit", "returncode": 1, "exit_status": 1, "signal": None, "signal_name": None, "signal_meaning": None, "forwarded_signals": []}
    run["exception"] = exception
    return run


def test_a_recorded_shadowing_of_the_wrong_shape_is_no_finding():
    raised = {"type": "AttributeError", "message": "module 'numpy' has no attribute 'zeros'", "frames": []}
    good = {"module": "numpy", "file": "/w/numpy.py", "hides": "/venv/site-packages/numpy/__init__.py"}
    assert "run.shadowed-module" in ids(judge_run(exited_with({**raised, "shadowing": good})))
    user_site = {**good, "file": "/home/me/.local/lib/python3.11/site-packages/numpy/__init__.py"}
    for shadowing in (None, [], "numpy", {**good, "file": 5}, {"module": "numpy"}, user_site):
        assert "run.shadowed-module" not in ids(judge_run(exited_with({**raised, "shadowing": shadowing}))), shadowing
