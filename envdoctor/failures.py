"""One classifier for the error text of a failure: a failed import (`check --imports`), a failed probe
stage, or the user's own command (`envdoctor run`).

It reads the error before guessing: the exception's own message is looked up in the table of messages
the stack raises (knowledge/errors.py: NumPy's ABI errors, the dynamic loader's, CUDA's and PyTorch's,
pickle's, gym's and SB3's, the operating system's), then CPython's "No module named", then the output
around the exception (a worker's error printed before the main process failed). A message the table
says explains the one found (a DataLoader worker's segfault before "worker exited unexpectedly", a
kernel's failed assertion before "device-side assert triggered") is the cause when the output holds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

from envdoctor.knowledge.errors import KnownError, explained_by, matching

NO_MODULE = re.compile(r"No module named '([^']+)'")
# What the kinds without a row are, named for a sentence about the process that failed.
NAMES = {
    "missing-module": "a module that is not installed",
    "error": "an exception",
    "worker-error": "an exception in a worker process, after which the main process lost its pipe to the worker",
    "worker-crash": "a worker process that crashed in native code, after which the main process lost its pipe to the worker",
}
# The main process's end of a pipe or socket whose other end went away.
LOST_PIPE = re.compile(r"^(?:EOFError|BrokenPipeError|ConnectionResetError|ConnectionAbortedError)\b")
# multiprocessing's line before the traceback of a worker that died of an exception (Lib/multiprocessing/process.py,
# BaseProcess._bootstrap: "Process %s:"), and the exception line that ends such a traceback.
WORKER_DIED = re.compile(r"^Process [\w.-]+:$", re.M)
# A worker of the spawn or forkserver start methods that died while it prepared itself (re-importing the
# main script, Lib/multiprocessing/spawn.py) never printed that line: its traceback starts in the entry
# point multiprocessing gives the new process.
WORKER_ENTRY = re.compile(
    r'^Traceback \(most recent call last\):\n(?:[ \t].*\n){0,8}?[ \t]+File "[^"\n]*multiprocessing[/\\](?:spawn|forkserver)\.py", line \d+, in (?:spawn_main|main)$',
    re.M,
)
EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b(?::.*)?$")
# What faulthandler's first line says of a process a fatal signal ends ("Fatal Python error: Segmentation
# fault", Modules/faulthandler.c), as crash/tracebacks.py records it: the part after the prefix, which
# two processes writing at once can leave repeated.
NATIVE_DEATH = re.compile(r"(?:Fatal Python error: )*(Segmentation fault|Aborted|Bus error|Floating[- ]point exception|Illegal instruction)$")


@dataclass(frozen=True)
class Failure:
    """A failure, classified: its kind, the name the error gives (library, module, symbol), its first line."""

    kind: str
    what: str
    named: str
    first_line: str
    known: Optional[KnownError] = None
    worker: str = ""  # the exception a worker process died of, when the process that failed lost its pipe to it

    @property
    def name(self) -> str:
        return self.known.cause if self.known else NAMES.get(self.kind, self.kind)


def first_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[0][:300] if lines else ""


def classify_message(message: str, text: str, line: str) -> Failure:
    """The failure `message` (an exception's "Type: text") names, reading the message first and then
    `text` (the message with the output around it); `line` is what is shown of it."""
    known = matching(message)
    missing = NO_MODULE.search(message)
    if known is None and missing:
        return Failure("missing-module", "needs a module that is not installed", missing.group(1), line)
    known = known or matching(text)
    if known is not None:
        known = explained_by(known, text) or known
        source = message if known.pattern.search(message) else text
        return Failure(known.kind, f"fails with {known.cause}", known.named(source) or "", line, known)
    return Failure("error", "raises an exception", "", line)


def worker_exception(output: str) -> Optional[Tuple[str, str]]:
    """The exception that ended the first multiprocessing worker whose traceback `output` holds (its
    line, with the message's first words where they start on the next line), and that traceback."""
    headers = [found for found in (WORKER_DIED.search(output), WORKER_ENTRY.search(output)) if found]
    if not headers:
        return None
    lines = output[min(header.start() for header in headers):].splitlines()
    for index, line in enumerate(lines):
        if index and EXCEPTION_LINE.match(line):
            said = message_lines(lines[index:])
            died = said[0] if said[0].partition(":")[2].strip() or len(said) == 1 else f"{said[0]} {said[1]}"
            return died, "\n".join(lines[:index] + said)
    return None


def message_lines(lines: List[str]) -> List[str]:
    """An exception line and the lines its message goes on over (indented or blank, as multiprocessing's
    own long messages are), stripped, the blank ones left out."""
    said = [lines[0].strip()]
    for line in lines[1:]:
        if line.strip() and not line[:1].isspace():
            break
        if line.strip():
            said.append(line.strip())
    return said


def classify_exception(exception: Optional[dict], output: str = "", fatal_error: Optional[str] = None) -> Optional[Failure]:
    """A parsed exception ({"type", "message"}) classified, with the output around it; None without one.
    A main process that lost its pipe to a worker (EOFError from SubprocVecEnv's `recv`) after that
    worker died of an exception failed of the worker's exception, classified as such; after a worker's
    fatal signal (`fatal_error`, faulthandler's first line as the run recorded it), of that crash."""
    if not exception:
        return None
    message = f"{exception.get('type')}: {exception.get('message', '')}"
    lost = LOST_PIPE.match(message)
    found = worker_exception(output) if lost else None
    if found is not None:
        died, traceback = found  # classified by the worker's own traceback, not by the main process's
        failure = classify_message(died, traceback, died)
        return replace(failure, worker=died) if failure.known is not None else Failure("worker-error", "loses a worker to an exception", "", died, worker=died)
    signal = NATIVE_DEATH.match(fatal_error or "") if lost else None
    if signal is not None:  # the process that raised outlived the signal: a worker of it died of that
        said = f"Fatal Python error: {signal.group(1)}"
        return Failure("worker-crash", "loses a worker to a native crash", "", said, worker=said)
    said = first_line(exception.get("message", ""))
    return classify_message(message, f"{message}\n{output}", f"{exception.get('type')}: {said}" if said else str(exception.get("type")))
