"""The exception a command died of, read from its stderr when other processes wrote into the traceback:
the interleavings below are what DataLoader workers that segfault and faulthandler left in real runs."""

from __future__ import annotations

import pytest

from envdoctor.capture.exceptions import last_exception

MAIN = [
    "Traceback (most recent call last):",
    '  File "/srv/train.py", line 19, in <module>',
    "    for batch in DataLoader(Frames(), batch_size=2, num_workers=2):",
    '  File "/venv/torch/utils/data/dataloader.py", line 1505, in _next_data',
    "    idx, data = self._get_data()",
    "          ^^^^^^^^^^^^^^^^",
    '  File "/venv/torch/utils/data/dataloader.py", line 1304, in _try_get_data',
    "    raise RuntimeError(",
    "RuntimeError: DataLoader worker (pid(s) 7636) exited unexpectedly",
]
WORKER = "ERROR: Unexpected segmentation fault encountered in worker.\n\0"
FAULTHANDLER = "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f2a (most recent call first):\n  File \"/srv/train.py\", line 14 in __getitem__\n"


def cut_in(at: int, text: str, indent: str = "") -> str:
    """The main traceback with `text` written into it before line `at`, after `indent` of that line."""
    lines = [line + "\n" for line in MAIN]
    lines[at] = indent + text + lines[at][len(indent):]
    return "".join(lines)


@pytest.mark.parametrize("stderr", [
    pytest.param("".join(line + "\n" for line in MAIN), id="alone"),
    pytest.param(cut_in(5, WORKER, indent="      "), id="worker-message-inside-a-line"),  # as a CI run recorded it
    pytest.param(cut_in(3, WORKER), id="worker-message-between-frames"),
    pytest.param(cut_in(7, FAULTHANDLER), id="faulthandler-dump-between-frames"),
])
def test_the_main_exception_is_read_through_what_other_processes_wrote_into_it(stderr):
    found = last_exception(stderr)
    assert found is not None, stderr
    assert (found["type"], found["message"]) == ("RuntimeError", "DataLoader worker (pid(s) 7636) exited unexpectedly")
    assert [f["function"] for f in found["frames"]] == ["_try_get_data", "_next_data", "<module>"]


def test_a_traceback_cut_off_before_its_exception_line_is_no_exception():
    assert last_exception("".join(line + "\n" for line in MAIN[:-1]) + FAULTHANDLER) is None


def test_a_workers_traceback_cut_off_after_the_main_one_leaves_the_main_exception():
    """A forkserver worker still printing when the run ended (as a CI run recorded it): the last whole traceback counts."""
    stderr = "".join(line + "\n" for line in MAIN) + 'Traceback (most recent call last):\n  File "/usr/lib/python3.11/multiprocessing/forkserver.py", line 274, in main\n    code = _serve_one(child_r, fds,\n'
    found = last_exception(stderr)
    assert found is not None and found["type"] == "RuntimeError" and found["frames"][0]["function"] == "_try_get_data", found
