"""Bounded crash reports, whatever faulthandler or gdb returns: recursion collapsed, a few hundred frames
per thread at most, JSON ≤ 2 MB and Markdown ≤ 20,000 characters for a C-stack overflow under --gdb
with a hundred thousand frames, and for hundreds of threads."""

from __future__ import annotations

import json

from envdoctor import engine
from envdoctor.capture import gdb
from envdoctor.capture.render import markdown_report
from envdoctor.codec import decode, encode
from envdoctor.crash import bounds, stacks
from envdoctor.model import Report
from conftest import TEST_DATA

RECORDED = TEST_DATA / "render" / "recorded" / "run-segv-worker.json"
MB = 1 << 20


def gdb_log(threads: int, depth: int) -> str:
    """gdb's `thread apply all bt` of a program whose thread 1 recursed `depth` times through f → g."""
    lines = [gdb.BEGIN]
    for number in range(1, threads + 1):
        lines.append(f'Thread {number} (Thread 0x7f{number:010x} (LWP {1000 + number}) "python"):')
        frames = [("f", "ext.c:10"), ("g", "ext.c:20")] * (depth // 2) if number == 1 else [("pthread_cond_wait", None)] * 3
        for index, (function, location) in enumerate(frames + [("main", None)]):
            lines.append(f"#{index} 0x00007f0000{index:06x} in {function} (x=0x1)" + (f" at {location}" if location else " from /lib/libc.so.6"))
    lines += [gdb.END, "Thread 1 \"python\" received signal SIGSEGV, Segmentation fault.", f"{gdb.EXIT} signal 11"]
    return "\n".join(lines)


def faulthandler_dump(threads: int) -> str:
    text = ["Fatal Python error: Segmentation fault", ""]
    for number in range(threads):
        text.append(f"{'Current thread' if number == 0 else 'Thread'} 0x{number + 1:016x} (most recent call first):")
        text += [f'  File "/srv/pool.py", line {10 + i} in step{i}' for i in range(100)] + [""]
    return "\n".join(text)


def test_a_c_stack_overflow_of_a_hundred_thousand_frames_is_collapsed_to_its_cycle():
    native = gdb.parse(gdb_log(threads=3, depth=104_802))
    crashed = next(t for t in native["threads"] if t["stopped"])
    assert len(crashed["frames"]) == 4  # f, g, the marker, main
    marker = bounds.deepest_recursion(crashed["frames"])
    assert marker["function"] == "f → g repeated 52,400 more times" and marker["repeated"] == 52_400
    assert len(json.dumps(native)) < 10_000


def test_hundreds_of_threads_of_deep_stacks_stay_within_the_bounds():
    native = gdb.parse(gdb_log(threads=300, depth=10))
    assert len(native["threads"]) == bounds.MAX_THREADS and native["threads_left_out"] == 200
    assert native["threads"][0]["stopped"]
    dump = stacks.parse(faulthandler_dump(300))
    assert dump["threads_left_out"] == 200 and dump["threads"][0]["current"]
    assert all(len(t["frames"]) <= bounds.MAX_FRAMES + 1 for t in dump["threads"])
    assert sum(len(t["frames"]) for t in dump["threads"]) <= bounds.MAX_TOTAL_FRAMES + bounds.MAX_THREADS * (2 * bounds.FEW + 1)


def test_a_stack_without_recursion_keeps_its_innermost_and_outermost_frames():
    frames = [{"file": f"/srv/m{i}.py", "line": i, "function": f"f{i}"} for i in range(1000)]
    kept = bounds.capped(bounds.collapsed(frames, bounds.python_key, bounds.python_marker), bounds.python_marker)
    assert len(kept) == bounds.MAX_FRAMES + 1
    assert kept[0] is frames[0] and kept[-1] is frames[-1] and kept[bounds.INNERMOST]["function"] == "800 frames left out"


def test_the_report_of_a_huge_gdb_capture_is_within_2_mb_of_json_and_20000_characters_of_markdown(tmp_path):
    recorded = json.loads(RECORDED.read_text())
    run = recorded["run"]
    run["under_gdb"] = True
    run["native_stacks"] = gdb.parse(gdb_log(threads=400, depth=104_802))
    run["python_stacks"] = stacks.parse(faulthandler_dump(400))
    gdb.join(run["python_stacks"], run["native_stacks"])
    judged = engine.judge({}, None, engine.Selection(), run)
    report = decode(Report, {**recorded, "findings": [encode(f) for f in judged.findings], "diagnosis": [encode(c) for c in judged.diagnosis]})
    assert len(json.dumps(encode(report))) <= 2 * MB
    text = markdown_report(report, None)
    assert len(text) <= 20_000
    assert text.count("```") % 2 == 0


def test_a_run_whose_frames_carry_pages_of_names_is_cut_to_its_budget_crashed_thread_first_kept():
    huge = "std::vector<" * 2000
    text = ["Fatal Python error: Segmentation fault", ""]
    for number in range(100):
        text.append(f"{'Current thread' if number == 0 else 'Thread'} 0x{number + 1:016x} (most recent call first):")
        text += [f'  File "/srv/{"deep/" * 100}m{i}.py", line {i} in f{i}' for i in range(100)] + [""]
    log = gdb_log(threads=100, depth=10).replace("pthread_cond_wait", huge)
    run = {"python_stacks": stacks.parse("\n".join(text)), "native_stacks": gdb.parse(log), "output_tail": [{"stream": "stderr", "text": "x" * 2000}] * 100, "opened_files": []}
    assert max(len(f["function"]) for t in run["native_stacks"]["threads"] for f in t["frames"]) <= bounds.TEXT_CHARS + 40  # a marker adds its count
    bounds.within_budget(run, 300_000)
    assert bounds.size_of(run) <= 300_000
    crashed = next(t for t in run["python_stacks"]["threads"] if t["current"])
    assert crashed["frames"][0]["function"] == "f0"
