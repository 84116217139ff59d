"""The Textual chat application (``edge chat``). Talks to edge/ only through its public API.

Dependencies point one way, ``tui → edge → models``: nothing in ``edge/`` imports this
package, and ``edge.cli`` imports it only inside the ``chat`` command, so recording and the
other commands never load Textual.
"""
