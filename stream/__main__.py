"""``python -m stream`` runs the command-line interface."""

from stream.cli.main import main

main()
