"""Scripts that run under the diagnosed interpreter.

They must not import envdoctor (the target environment may not have it), may use only the standard
library, and must stay valid Python 3.8 syntax. They print one JSON document on stdout.
"""

from pathlib import Path

from envdoctor import package_data

SCRIPTS = Path(__file__).parent


def script_path(name: str) -> Path:
    return SCRIPTS / f"{name}.py"


def script_source(name: str) -> str:
    """The script's text, to run as `python -c` (readable from a zipapp too, where it has no path)."""
    return package_data.read_text(__name__, f"{name}.py")
