"""envdoctor.pyz: the doctor runs from this one file, isolated from the environment it diagnoses.

The interpreter that runs the archive is the one diagnosed (the target scripts run under it as
children), but nothing of its site-packages may enter the doctor: a broken `rich` there must not
break it, and an installed envdoctor must not stand in for this one. So the archive restarts the
interpreter once with -I -S (no site-packages, no .pth files, no PYTHON* variables, no user site);
then only the standard library and the modules vendored in this archive can be imported.
"""

import os
import subprocess
import sys


def isolated() -> bool:
    return bool(sys.flags.isolated and sys.flags.no_site)


def restart_isolated(archive: str) -> None:
    argv = [sys.executable, "-I", "-S", archive] + sys.argv[1:]
    if os.name == "posix":
        os.execv(sys.executable, argv)
    sys.exit(subprocess.call(argv))  # Windows has no exec that keeps the console


def main() -> None:
    archive = os.path.dirname(os.path.abspath(__file__))
    if not isolated() and sys.executable:
        restart_isolated(archive)
    from envdoctor.cli import main as cli

    cli()


main()
