"""Run load_model.py's loads from one process that imports torch and SB3 once, each load in a forked child.

Importing torch and SB3 takes seconds; a fork of a process that has imported them takes milliseconds. Each
load still runs in a process of its own, as `python load_model.py ...` would: a load that segfaults, raises
or runs a pickled payload does so in its child, which exits as that command would have (an uncaught
exception: its traceback on stderr and status 1; a signal: a negative status).

Protocol: one JSON request a line on stdin, {"argv": [...], "timeout": seconds};
one JSON answer a line on stdout, {"returncode": n, "stdout": text, "stderr": text, "timed_out": bool}.
"""

import json
import os
import signal
import sys
import tempfile
import time
import traceback

import load_model  # torch, numpy, SB3 and sb3-contrib: imported here once, before any fork
import torch._dynamo  # noqa: F401  (imported by the first optimizer a loaded model builds: seconds more)

POLL_S = 0.02


def run_in_child(argv, out, err):
    """In the forked child: load_model.main(argv) with stdout and stderr going to the files `out` and `err`."""
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    code = 0
    try:
        load_model.main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def wait(pid, timeout):
    """The child's exit status as subprocess reports it, or None once it outlived `timeout` (then it is killed)."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(POLL_S)


def serve(request):
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            run_in_child(request["argv"], out, err)
        returncode = wait(pid, request["timeout"])
        out.seek(0)
        err.seek(0)
        return {"returncode": returncode, "stdout": out.read(), "stderr": err.read(), "timed_out": returncode is None}


def main():
    for line in sys.stdin:
        print(json.dumps(serve(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
