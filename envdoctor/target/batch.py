"""Run several target scripts in one start of the diagnosed interpreter, each as its own `__main__`.

Starting the interpreter (site, .pth files, a conda activation's hooks) costs more than most scripts'
work, and `check` needs two of them every time. Arguments: the scripts' sources. Each runs in a fresh
namespace with its own standard output; for each, in order, one record is written to the standard output
this script was given (the doctor's result channel): "ok" or "error",
a newline, the script's output (or its exception, one line), and a NUL byte, which JSON never holds.
Stdlib only, Python 3.8 syntax.
"""

import io
import sys
import traceback


def run(source, channel):
    """What the script printed and whether it ended well; `channel` is the stdout to restore after it."""
    captured = io.StringIO()
    sys.stdout = captured
    try:
        exec(compile(source, "<target script>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as end:
        if end.code not in (None, 0):
            return False, "exited with status {}".format(end.code)
    except Exception as error:
        return False, traceback.format_exception_only(type(error), error)[-1].strip()
    finally:
        sys.stdout = channel
    return True, captured.getvalue()


def main():
    sources = sys.argv[1:]
    channel = sys.stdout  # the doctor's result channel, set up before this script runs
    for source in sources:
        sys.argv = ["-c"]
        ok, text = run(source, channel)
        channel.write(("ok\n" if ok else "error\n") + text + "\0")
    channel.flush()


if __name__ == "__main__":
    main()
