"""The intermediary between the doctor and every child it starts: the child's parent is this process,
never the doctor.

Foreign code (a package's import, the probe's stages, the user's program under `run`) can do anything
to its parent; a package whose import runs `os.kill(os.getppid(), signal.SIGKILL)` would otherwise kill
the doctor before it writes a word. Here it kills this intermediary instead: the kernel then kills the
program too (its parent-death signal), and the doctor sees its child killed by SIGKILL, a result like
any other crash.

The intermediary is a child sub-reaper (`PR_SET_CHILD_SUBREAPER`): what the program starts and orphans
(a daemon's double fork, a worker that left its session) is re-parented here instead of to init, so
the doctor still finds it in its child's tree and ends it. It ignores the signals a terminal or a
scheduler sends (the doctor delivers those to the program itself) and reports on a pipe, one line
each: `S PID` once the program runs, `E ERRNO` when it could not start, `X CODE` when it ended (a
return code, negative for a signal). It then stays, reaping orphans, until none is left or the doctor
ends it; says `R` once it has no child left (as a sub-reaper, then no process of the program's tree
lives: the doctor has nothing to look for and end), and exits as the program did.

Run by the doctor's own interpreter as `python -I -S -c SOURCE FD DOCTOR CTYPE PROGRAM...`; importing
this module runs nothing, and it uses the standard library only, in Python 3.8 syntax. It asks first
to be killed when the doctor (pid DOCTOR) dies, even by SIGKILL, and ends at once if the doctor is
already gone: the doctor then starts it without a function run between fork and exec, which would
keep subprocess from using vfork (each start of a child would copy the doctor's page tables). CTYPE
is the program's LC_CTYPE (`=value`, or `-` for none): the interpreter's start may have coerced a C
locale, and the program must get the environment it was given.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
SHIELDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE", "SIGXFSZ")
# The interpreter's start ignores these itself; Popen's child gets them back at their defaults.
DEFAULT_FOR_PROGRAM = ("SIGPIPE", "SIGXFSZ")
CANNOT_START = 127


def prctl_function():
    """libc's prctl on Linux; elsewhere a stand-in that does nothing (there the program's parent is
    still this process, without the sub-reaper and the death signal)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return lambda *arguments: 0
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return prctl


def program_dispositions():
    """What each shielded signal must be for the program: as it was handed to this process."""
    dispositions = {}
    for name in SHIELDED:
        number = getattr(signal, name)
        current = signal.getsignal(number)
        keep = current is signal.SIG_IGN and name not in DEFAULT_FOR_PROGRAM
        dispositions[number] = signal.SIG_IGN if keep else signal.SIG_DFL
    return dispositions


def program_environment(ctype):
    environment = dict(os.environ)
    environment.pop("LC_CTYPE", None)
    if ctype.startswith("="):
        environment["LC_CTYPE"] = ctype[1:]
    return environment


def tell(report, line):
    try:
        os.write(report, (line + "\n").encode())
    except OSError:
        pass  # the doctor is gone; its death signal ends this process next


def exit_code(status):
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def start(program, environment, dispositions, prctl):
    """Fork the program; return its pid, or the errno that kept it from starting."""
    failed_read, failed_write = os.pipe()
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(failed_read)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != me:
                os._exit(CANNOT_START)
            for number, disposition in dispositions.items():
                signal.signal(number, disposition)
            os.execvpe(program[0], program, environment)
        except OSError as error:
            os.write(failed_write, str(error.errno or 0).encode())
        finally:
            os._exit(CANNOT_START)
    os.close(failed_write)
    failure = b""
    while True:
        chunk = os.read(failed_read, 64)
        if not chunk:
            break
        failure += chunk
    os.close(failed_read)
    if failure:
        os.waitpid(pid, 0)
        return None, int(failure)
    return pid, 0


def end_as(code):
    """Exit as the program did: by its signal (without a core of this process), or with its code."""
    if code is not None and code < 0:
        prctl_function()(PR_SET_DUMPABLE, 0, 0, 0, 0)
        try:
            signal.signal(-code, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL's (and a reserved real-time signal's) cannot be set, and SIGKILL needs none
        os.kill(os.getpid(), -code)
        os._exit(128 - code)
    os._exit(CANNOT_START if code is None else code)


def main(argv):
    report, doctor, ctype, program = int(argv[1]), int(argv[2]), argv[3], argv[4:]
    prctl = prctl_function()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != doctor:
        os._exit(CANNOT_START)  # the doctor died before the death signal was armed
    os.set_inheritable(report, False)
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    dispositions = program_dispositions()
    for number in dispositions:
        signal.signal(number, signal.SIG_IGN)
    pid, errno = start(program, program_environment(ctype), dispositions, prctl)
    if pid is None:
        tell(report, "E %d" % errno)
        os._exit(CANNOT_START)
    tell(report, "S %d" % pid)
    code = None
    while True:
        try:
            ended, status = os.wait()
        except ChildProcessError:
            break
        if ended == pid:
            code = exit_code(status)
            tell(report, "X %d" % code)
    tell(report, "R")
    end_as(code)


if __name__ == "__main__":
    main(sys.argv)
