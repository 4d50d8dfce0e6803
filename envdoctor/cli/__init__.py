"""The command line: parse options, call the engine, choose a renderer, pick the exit code. No logic.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 bad usage or unreadable
input (one line, no traceback); 3 an internal bug of the doctor.
"""

from __future__ import annotations

import importlib
import sys
import traceback

import click

from envdoctor import KNOWLEDGE_DATE, __version__
from envdoctor.cli.helptext import epilog
from envdoctor.cli.stdout import GuardedStdout
from envdoctor.errors import EnvdoctorError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_BUG = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it


COMMANDS = {
    "check": "envdoctor.cli.check:check",
    "checks": "envdoctor.cli.check:list_checks",
    "inspect": "envdoctor.cli.inspect:inspect_command",
    "sanitize": "envdoctor.cli.inspect:sanitize_command",
    "fix": "envdoctor.cli.fix:fix",
    "run": "envdoctor.cli.run:run",
    "diff": "envdoctor.cli.diff:diff",
    "fleet": "envdoctor.cli.fleet:fleet",
}


class LazyGroup(click.Group):
    """A group that imports a command's module only when that command runs (or help lists it),
    so `envdoctor check` does not pay for importing `fix`, `run`, `fleet` and the rest."""

    def list_commands(self, ctx: click.Context) -> list:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attribute = target.split(":")
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}, epilog=epilog((("0, 1", "as each command's --help says"),), "envdoctor check"))
@click.version_option(__version__, prog_name="envdoctor", message=f"%(prog)s, version %(version)s (knowledge tables of {KNOWLEDGE_DATE})")
def cli() -> None:
    """Explain why a PyTorch / CUDA / Stable-Baselines3 stack crashes here, and how to fix it."""


def main(argv=None) -> None:
    stdout, sys.stdout = sys.stdout, GuardedStdout(sys.stdout)
    try:
        code = cli.main(args=argv, prog_name="envdoctor", standalone_mode=False)
    except click.exceptions.Abort as error:
        # click turns Ctrl-C (and end of input at a prompt) into Abort when it does not exit itself
        interrupted = isinstance(error.__cause__, KeyboardInterrupt)
        click.echo("Interrupted." if interrupted else "Aborted: no answer on standard input.", err=True)
        code = EXIT_INTERRUPTED if interrupted else EXIT_USAGE
    except click.ClickException as error:
        error.show()
        code = EXIT_USAGE
    except EnvdoctorError as error:
        click.echo(f"envdoctor: error: {error}", err=True)
        code = EXIT_USAGE
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        code = EXIT_INTERRUPTED
    except Exception:
        code = internal_error()
    finally:
        sys.stdout.flush()
        sys.stdout = stdout
    sys.exit(code or 0)


def internal_error() -> int:
    click.echo("envdoctor: internal error (a bug in envdoctor; please report it with this traceback):", err=True)
    click.echo(traceback.format_exc(), err=True)
    return EXIT_BUG

