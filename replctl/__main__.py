"""`python -m replctl` runs the command-line tool."""

from replctl.cli import main

main()
