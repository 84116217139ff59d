"""``python -m edge.cli``: the same as the ``edge`` command."""

from edge.cli import main

main()
