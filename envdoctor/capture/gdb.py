"""`--gdb`: run the command under gdb in batch mode for the native backtrace of every thread.

gdb stops at the first fatal signal, records `thread apply all bt`, then lets the signal through so
faulthandler still dumps the Python stacks and the command still dies as it would have. gdb's own
output goes to a log file (never between the user's lines); the log is parsed into native threads
whose pthread ids match faulthandler's thread ids.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import List, Optional, Sequence

from envdoctor.crash import bounds
from envdoctor.errors import UsageError

FATAL_SIGNALS = "SIGSEGV SIGBUS SIGFPE SIGILL SIGABRT"
BEGIN, END, EXIT = "ENVDOCTOR-NATIVE-BEGIN", "ENVDOCTOR-NATIVE-END", "ENVDOCTOR-EXIT"
SCRIPT = f"""\
set pagination off
set confirm off
set width 0
set disable-randomization off
set print thread-events off
set logging file {{log}}
set logging overwrite on
set logging redirect on
set logging debugredirect on
set logging enabled on
handle all nostop noprint pass
handle SIGINT nostop noprint pass
handle {FATAL_SIGNALS} stop print pass
set $envdoctor_stops = 0
run
while $_isvoid($_exitcode) && $_isvoid($_exitsignal)
  if $envdoctor_stops == 0
    printf "{BEGIN}\\n"
    thread apply all bt
    printf "{END}\\n"
  end
  set $envdoctor_stops = $envdoctor_stops + 1
  continue
end
if !$_isvoid($_exitcode)
  printf "{EXIT} code %d\\n", $_exitcode
end
if !$_isvoid($_exitsignal)
  printf "{EXIT} signal %d\\n", $_exitsignal
end
"""

THREAD = re.compile(r'^Thread (\d+) \(Thread (0x[0-9a-f]+) \(LWP (\d+)\)(?: "([^"]*)")?\):')
FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(.+?) \((.*?)\)(?: (?:at|from) (\S+))?\s*$")
STOP = re.compile(r'^(?:Thread (\d+) "([^"]*)"|Program) received signal (SIG\w+)', re.MULTILINE)


def gdb_path() -> str:
    found = shutil.which("gdb")
    if not found:
        raise UsageError("--gdb needs gdb, which is not installed (e.g. `sudo apt-get install gdb`); run without --gdb")
    return found


def executable_argv(argv: Sequence[str]) -> List[str]:
    """gdb can only start a binary: a `#!` script (a console script, a pyenv shim) is run by its interpreter."""
    program = shutil.which(argv[0]) or argv[0]
    try:
        with open(program, "rb") as stream:
            first = stream.readline(512)
    except OSError:
        return list(argv)
    if not first.startswith(b"#!"):
        return [program, *argv[1:]]
    interpreter = first[2:].decode(errors="replace").split()
    return [*interpreter, program, *argv[1:]]


def wrap(argv: Sequence[str], workdir: Path) -> tuple:
    """The gdb command line for `argv`, and the log file it will write."""
    log = workdir / "gdb.log"
    script = workdir / "envdoctor.gdb"
    script.write_text(SCRIPT.format(log=log), encoding="utf-8")
    command = [gdb_path(), "-batch", "-nx", "-q", "-iex", "set auto-load python-scripts off", "-x", str(script), "--args", *executable_argv(argv)]
    return command, log


def parse(log_text: str) -> dict:
    """The native threads at the first fatal stop, which thread stopped, and how the program ended."""
    native = log_text.split(BEGIN, 1)[1].split(END, 1)[0] if BEGIN in log_text else ""
    threads: List[dict] = []
    for line in native.splitlines():
        header, frame = THREAD.match(line), FRAME.match(line)
        if header:
            threads.append({"number": int(header.group(1)), "pthread": header.group(2), "lwp": int(header.group(3)), "name": header.group(4), "frames": []})
        elif frame and threads:
            threads[-1]["frames"].append({"index": int(frame.group(1)), "function": bounds.clipped(frame.group(2)), "location": bounds.clipped(frame.group(4))})
    stop = STOP.search(log_text)
    stopped_number = int(stop.group(1)) if stop and stop.group(1) else (threads[0]["number"] if stop and threads else None)
    for thread in threads:
        thread["stopped"] = thread["number"] == stopped_number
    threads, left_out = bounds.bounded(threads, bounds.native_key, bounds.native_marker, lambda t: t["stopped"])
    return {"signal": stop.group(3) if stop else None, "threads": threads, "threads_left_out": left_out, "returncode": returncode(log_text)}


def returncode(log_text: str) -> Optional[int]:
    """The program's own ending as Popen would report it (negative for a signal), None if gdb never saw one."""
    match = re.search(rf"^{EXIT} (code|signal) (\d+)$", log_text, re.MULTILINE)
    if not match:
        return None
    return int(match.group(2)) * (-1 if match.group(1) == "signal" else 1)


def join(python_stacks: Optional[dict], native: dict) -> None:
    """Give each Python thread its native name and frames, matched by pthread id."""
    if not python_stacks:
        return
    by_pthread = {int(t["pthread"], 16): t for t in native["threads"]}
    for thread in python_stacks["threads"]:
        match = by_pthread.get(int(thread["id"], 16)) if thread.get("id") else None
        if match:
            thread["native_name"] = match["name"]
            thread["native_frames"] = match["frames"]


def read_log(log: Path) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
