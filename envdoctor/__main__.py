"""`python -m envdoctor` runs the same CLI as the console script."""

import sys

try:
    from envdoctor.cli import main
except KeyboardInterrupt:  # Ctrl-C while the CLI is still being imported (seconds on a loaded machine)
    sys.stderr.write("Interrupted.\n")
    sys.exit(130)

main()
