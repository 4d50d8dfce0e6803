"""The command line: parse options, call the engine, choose a renderer, pick the exit code. No logic.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 bad usage or unreadable
input (one line, no traceback); 3 an internal bug of the doctor.
"""

from __future__ import annotations

import sys
import traceback

import click

from envdoctor import __version__
from envdoctor.errors import EnvdoctorError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_BUG = 0, 1, 2, 3


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="envdoctor")
def cli() -> None:
    """Explain why a PyTorch / CUDA / Stable-Baselines3 stack crashes here, and how to fix it."""


# Commands register themselves on `cli` when their modules are imported.
from envdoctor.cli import check as _check  # noqa: E402,F401
from envdoctor.cli import fix as _fix  # noqa: E402,F401
from envdoctor.cli import diff as _diff  # noqa: E402,F401
from envdoctor.cli import fleet as _fleet  # noqa: E402,F401
from envdoctor.cli import inspect as _inspect  # noqa: E402,F401
from envdoctor.cli import run as _run  # noqa: E402,F401


def main(argv=None) -> None:
    try:
        code = cli.main(args=argv, prog_name="envdoctor", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        code = EXIT_USAGE
    except click.ClickException as error:
        error.show()
        code = EXIT_USAGE
    except EnvdoctorError as error:
        click.echo(f"envdoctor: error: {error}", err=True)
        code = EXIT_USAGE
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        code = 130
    except Exception:
        click.echo("envdoctor: internal error (a bug in envdoctor; please report it with this traceback):", err=True)
        click.echo(traceback.format_exc(), err=True)
        code = EXIT_BUG
    sys.exit(code or 0)
