"""How a run is shown: the one-line summary of a clean exit, the crash summary on stderr, and the
crash section at the top of the Markdown report (the shared renderers draw the findings below it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

from rich.text import Text

from envdoctor.capture.chart import text_chart
from envdoctor.crash import bounds, stacks
from envdoctor.escape import escaped
from envdoctor.facts.run_describe import amount
from envdoctor.model import Report, Severity
from envdoctor.render import kit, markdown
from envdoctor.render.diagnosis import markdown_lines
from envdoctor.render.terminal import diagnosis_block, finding_block
from envdoctor.render.view import ReportRenderer

STACK_LINES = 8
MARKDOWN_FRAMES = 40
MARKDOWN_THREADS = 12
MARKDOWN_CHARS = 20_000


def headline(run: dict) -> str:
    """e.g. "killed by SIGSEGV after 3.2 s (exit status 139)"."""
    end = run["ending"]
    kind, took = end["kind"], f"after {run['duration_s']:.1f} s"
    if kind == "signal":
        what = f"killed by {end['signal_name']} {took}"
    elif kind == "hang":
        what = f"hung (no output for {run['hang_timeout_s']:g} s), ended {took}"
    elif kind == "interrupted":
        what = f"interrupted by {', '.join(end['forwarded_signals'])} {took}"
    elif kind == "not-started":
        what = f"could not be started: {end['start_error']}"
    else:
        what = f"exited {took}"
    return f"{what} (exit status {end['exit_status']})"


def gpu_peaks(run: dict) -> str:
    gpu = run.get("gpu") or {}
    if not gpu.get("devices"):
        reason = "; ".join(gpu.get("problems") or []) or "no samples"
        return f"GPU memory not sampled ({reason})"
    parts = []
    for device in gpu["devices"]:
        used = [s["gpu_used_bytes"][device["index"]] for s in gpu.get("samples", ()) if device["index"] < len(s["gpu_used_bytes"])]
        parts.append(f"GPU{device['index']} {amount(max(used) if used else None)} of {amount(device.get('total_bytes'))}")
    return "peak GPU memory " + ", ".join(parts)


def one_line(run: dict) -> str:
    """The summary of a run that needs no report: duration, peak RSS, peak GPU memory."""
    memory = run["memory"]
    return f"envdoctor: command {headline(run)} · peak RSS {amount(memory.get('peak_rss_bytes'))} · {gpu_peaks(run)}"


def frame_lines(thread: dict, limit: int = STACK_LINES) -> List[str]:
    """The innermost frames, down to the frame at fault however deep it is, marked where the standard
    library's frames above it hide it."""
    frames = thread["frames"]
    fault = stacks.frame_at_fault(frames)
    shown = frames[: max(limit, frames.index(fault) + 1 if fault else 0)]
    lines = [(python_line(f) if f["file"] == bounds.MARKER_FILE else f"{f['function']}  {stacks.short(f['file'])}:{f['line']}") + ("  ← first frame outside the standard library" if f is fault and f is not frames[0] else "") for f in shown]
    if len(frames) > len(shown) or thread.get("truncated"):
        lines.append("…")
    return lines


def terminal_summary(report: Report, saved: List[str], color: bool, width: int = 100) -> str:
    """What the user sees on stderr after an abnormal ending: where it died, memory, verdicts, files."""
    report = escaped(report)
    run = report.run
    console = kit.console(width, color)
    console.print(Text.assemble(("envdoctor: ", "bold"), ("command " + headline(run), "bold red")))
    diagnosis_block(console, report)
    python_stacks = run.get("python_stacks") or {}
    for thread in python_stacks.get("threads", ()):
        mark = "crashed in" if thread["current"] and run["ending"]["kind"] == "signal" else "thread:"
        console.print(Text(f"  {mark} {stacks.thread_label(thread)}"))
        for line in frame_lines(thread, STACK_LINES if thread["current"] else 2):
            console.print(Text(f"      {line}", style="dim"))
    for line in text_chart(run):
        console.print(Text(f"  {line}"))
    console.print(Text(f"  {gpu_peaks(run)}", style="dim"))
    for finding in report.findings:
        if finding.severity >= Severity.WARNING:
            finding_block(console, finding, verbose=False)
    if saved:
        beside = ", ".join(path.rsplit(".", 1)[-1] for path in saved[1:])
        console.print(Text(f"  Report: {saved[0]}" + (f" (with {beside} beside it)" if beside else ""), style="bold"))
    return kit.drawn(console)


def code_block(lines: List[str], language: str = "text") -> str:
    return kit.fence("\n".join(lines), language)


def python_line(frame: dict) -> str:
    """A frame as Python prints it; a frame that stands for left-out ones (crash/bounds.py) as what it says."""
    if frame["file"] == bounds.MARKER_FILE:
        return f"… {frame['function']}"
    return f'File "{frame["file"]}", line {frame["line"]}, in {frame["function"]}'


def native_line(frame: dict) -> str:
    if frame.get("index") is None:
        return f"… {frame['function']}"
    return f"#{frame['index']} {frame['function']}" + (f" at {frame['location']}" if frame.get("location") else "")


def at_most(frames: List[dict], limit: int = MARKDOWN_FRAMES) -> List[dict]:
    """At most `limit` frames of a stack, innermost first; the JSON report keeps the rest."""
    return bounds.capped(list(frames), bounds.python_marker if frames and "file" in frames[0] else bounds.native_marker, limit, limit * 3 // 4)


def thread_section(thread: dict, crashed: bool) -> str:
    title = stacks.thread_label(thread) + (" — crashed here" if crashed else "")
    lines = [python_line(f) for f in at_most(thread["frames"])] or ["<no Python frame>"]
    native = [native_line(f) for f in at_most(thread.get("native_frames") or [])]
    parts = [f"**{title}** (most recent call first)\n", code_block(lines, "python")]
    if native:
        parts.append(kit.folded(f"native frames ({len(native)})", "\n".join(native), "text"))
    return "\n".join(parts)


def crashed_first(threads: List[dict], crashed) -> List[dict]:
    """The threads the Markdown shows: the crashed one first, at most MARKDOWN_THREADS."""
    return sorted(threads, key=lambda t: not crashed(t))[:MARKDOWN_THREADS]


def markdown_section(report: Report, picture_name: Optional[str]) -> str:
    """The crash itself, above the environment findings: its diagnosis, ending, stacks, memory, output tail."""
    run = report.run
    end = run["ending"]
    parts = [f"## Crash: command {headline(run)}", "", *markdown_lines(report), f"`{' '.join(run['command'])}`" + (" · under gdb" if run.get("under_gdb") else ""), ""]
    if end.get("signal_meaning"):
        parts += [f"**{end['signal_name']}**: {end['signal_meaning']}.", ""]
    python_stacks = run.get("python_stacks")
    if python_stacks:
        parts += ["### Python stacks (faulthandler)", ""]
        if python_stacks.get("fatal_error"):
            parts += [f"Fatal Python error: {python_stacks['fatal_error']}", ""]
        threads = python_stacks["threads"]
        for thread in crashed_first(threads, lambda t: t["current"]):
            parts.append(thread_section(thread, thread["current"] and end["kind"] == "signal"))
        parts += left_out_line(len(threads) + (python_stacks.get("threads_left_out") or 0))
    native = run.get("native_stacks")
    if native and native.get("threads"):
        body = "\n".join(
            f"Thread {t['number']} {t.get('name') or ''} (LWP {t['lwp']}){' — stopped here' if t.get('stopped') else ''}\n"
            + "\n".join(f"  {native_line(f)}" for f in at_most(t["frames"]))
            for t in crashed_first(native["threads"], lambda t: t.get("stopped"))
        )
        count = len(native["threads"]) + (native.get("threads_left_out") or 0)
        parts += ["### Native stacks (gdb)", "", kit.folded(f"{count} threads, stopped by {native.get('signal')}", body, "text")]
        parts += left_out_line(count)
    memory = run["memory"]
    parts += ["### Memory", ""]
    if picture_name:
        parts += [f"![memory timeline]({picture_name})", ""]
    parts += [
        f"- peak RSS (whole process tree): {amount(memory.get('peak_rss_bytes'))} at {memory.get('peak_rss_at_s') or 0:.1f} s",
        f"- address-space limit (RLIMIT_AS): {amount(memory.get('address_space_limit_bytes')) if memory.get('address_space_limit_bytes') else 'none'}",
        *(f"- memory cgroup `{c['path']}`: limit {amount(c.get('limit_bytes')) if c.get('limit_bytes') else 'none'}, OOM kills during the run: {c.get('oom_kills_during_run')}" for c in memory.get("cgroups", ())),
        f"- {gpu_peaks(run)}",
        "",
    ]
    chart = text_chart(run)
    if chart:
        parts.append(code_block(chart))
    tail = run.get("output_tail") or []
    if tail:
        parts += [f"### Output (last {len(tail)} lines)", "", code_block([("! " if line["stream"] == "stderr" else "  ") + line["text"] for line in tail])]
        parts += ["Lines marked `!` came from stderr.", ""]
    return "\n".join(parts) + "\n"


def left_out_line(count: int) -> List[str]:
    if count <= MARKDOWN_THREADS:
        return []
    return [f"{count - MARKDOWN_THREADS} more threads are in the JSON report.", ""]


def within_bound(text: str, limit: int = MARKDOWN_CHARS) -> str:
    """`text` cut to `limit` characters at a line's end, its open code fence closed, with a line that says so."""
    if len(text) <= limit:
        return text
    note = f"\n\n*The rest of this report ({len(text) - limit:,} more characters) is in the JSON report beside it.*\n"
    cut = text[: limit - len(note) - 8]
    cut = cut[: cut.rfind("\n") + 1] if "\n" in cut else cut
    fence = "```\n" if sum(1 for line in cut.splitlines() if line.startswith("```")) % 2 else ""
    return cut + fence + note


def markdown_report(report: Report, picture_name: Optional[str]) -> str:
    """The crash and the environment's findings, within MARKDOWN_CHARS: a ticket takes it whole."""
    return within_bound(markdown_section(escaped(report), picture_name) + "\n" + markdown.render(report, cause_shown=True))


@dataclass(frozen=True)
class CrashRenderer(ReportRenderer):
    """`envdoctor run`'s crash report: the summary on stderr naming the `saved` files, and the Markdown
    saved beside the JSON, showing the memory `picture` saved with them."""

    saved: Sequence[str] = ()
    picture: Optional[str] = None

    def terminal(self, verbose: bool = False, color: bool = False) -> str:
        return terminal_summary(self.report, list(self.saved), color)

    def markdown(self) -> str:
        return markdown_report(self.report, self.picture)
