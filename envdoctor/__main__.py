"""`python -m envdoctor` runs the same CLI as the console script."""

from envdoctor.cli import main

main()
