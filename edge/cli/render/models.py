"""What ``edge models`` and ``edge doctor`` print: the roles of a profile and their
weights, the recommended models, a pull, a registered model, the health checks."""

from __future__ import annotations

from pathlib import Path


def role_lines(profile: str, rows: list[dict]) -> list[str]:
    """``edge models list``: each role's model, backend, state and weights (or its error),
    and under it the model's licence."""
    lines = [f"profile {profile}"]
    for r in rows:
        status = "ok" if r["ok"] else "FAIL"
        if r["ok"] and not r["loaded"]:
            status = "found"
        lines.append(f"  {r['role']:17} {r['model']:30} {r['backend']:14} {status:5} "
                     f"{r['weights'] or '-'}")
        if r.get("license", "-") != "-":
            lines.append(f"  {'':17} licence: {r['license']}")
        if r["error"]:
            lines.append(f"  {'':17} {r['error']}")
    return lines


def recommended_lines(rows: list[dict], models_dir: Path) -> list[str]:
    """``edge models recommended``: the models to pull (nothing when there are none)."""
    if not rows:
        return []
    lines = [f"recommended models (edge models pull NAME; into {models_dir})"]
    for r in rows:
        lines.append(f"  {r['name']:30} {r['role']:18} {r['download_mb'] or '?':>5} MB "
                     f"{r['ram_gb'] or '?':>4} GB RAM  "
                     f"{'present' if r['present'] else '-':8} {r['license']}")
    return lines


def pulled_lines(name: str, files) -> list[str]:
    """``edge models pull``: each file of the model, then how to use it."""
    lines = []
    for f in files:
        how = "downloaded" if f.downloaded else "already present"
        check = ("sha256 verified" if f.verified else
                 f"sha256 {f.sha256} (unverified: the manifest records no checksum)")
        lines.append(f"{how:15} {f.path}  {check}")
    lines.append(f"{name} is ready; use it in a profile (see `edge models recommended`).")
    return lines


def added_lines(spec, user_file: Path) -> list[str]:
    """``edge models add``: what was recorded where, and how a profile names the model."""
    from humanfriendly import format_size

    made = [spec.backend, format_size(spec.option("size") or 0), spec.option("quant"),
            spec.option("derived_from") and f"from {spec.option('derived_from')}"]
    role = "embedder" if "embedder" in spec.backend else "solver"
    return [f"registered {spec.name}: {spec.option('path')} ({', '.join(filter(None, made))})",
            f"  sha256 {spec.option('sha256')}, recorded in {user_file}",
            "Use it in a profile of that file, e.g.", "  [profiles.mine]", '  base = "small"',
            "  [profiles.mine.roles]", f'  {role} = "{spec.name}"']


def user_model_lines(rows: list[dict], title: str) -> list[str]:
    """``edge models user|verify`` (and the end of ``list``): under ``title``, each model
    file, its size, quantization, origin and state (nothing when there are none)."""
    from humanfriendly import format_size

    if not rows:
        return []
    lines = [title]
    for r in rows:
        size = format_size(r["size"]) if r["size"] is not None else "?"
        origin = f"from {r['derived_from']}" if r["derived_from"] else ""
        state = r["state"] if r["ok"] else "FAIL"
        lines.append(f"  {r['name']:30} {r['backend']:18} {size:>9} {r['quant'] or '-':7} "
                     f"{origin:32} {state}")
        lines.append(f"  {'':30} {r['path']}")
        if not r["ok"]:
            lines.append(f"  {'':30} {r['state']}")
    return lines


def profile_line(profile) -> str:
    """``edge doctor``: the profile in use and what it is for (its limits)."""
    return f"      {'profile':22} {profile.name}: {profile.description}"


def check_line(check) -> str:
    """``edge doctor``: one :class:`edge.cli.doctor.Check`."""
    return f"{'ok  ' if check.ok else 'FAIL'}  {check.name:22} {check.detail}"
