"""The PNG plots of ``edge bench report`` (matplotlib, Agg backend, imported on first use so
that ``edge`` never loads it otherwise). Each function takes plain series — ``(label, xs,
ys)`` with ``None`` for a missing y — writes one PNG and returns its path."""

from __future__ import annotations

from pathlib import Path

Series = tuple[str, list[float], list[float | None]]
"""One line: its legend label, x values and y values (``None``: not measured there)."""

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
"""The eight bytes every PNG file starts with."""


def _pyplot():
    """matplotlib's pyplot on the non-interactive Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _points(xs: list[float], ys: list[float | None]) -> tuple[list[float], list[float]]:
    """The (x, y) pairs of a series whose y was measured."""
    pairs = [(x, y) for x, y in zip(xs, ys) if y is not None]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _save(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` (parents created) and close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=110)
    _pyplot().close(fig)
    return path


def line_chart(path: Path, title: str, xlabel: str, ylabel: str, ours: list[Series],
               papers: list[Series], *, log: bool = False, ylim: tuple | None = None,
               integer_x: bool = False) -> Path:
    """Lines with markers: ``ours`` solid, ``papers`` dashed (grey family); log-log axes
    with ``log``; ``ylim`` fixes the y range (e.g. (0, 1) for rates)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, xs, ys in ours:
        px, py = _points(xs, ys)
        ax.plot(px, py, marker="o", linewidth=2, label=label)
    for label, xs, ys in papers:
        px, py = _points(xs, ys)
        ax.plot(px, py, marker="s", linestyle="--", linewidth=1.2, alpha=0.8, label=label)
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    if ylim:
        ax.set_ylim(*ylim)
    if integer_x:
        ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(True, alpha=0.3, which="both")
    if ours or papers:
        ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


def grouped_bars(path: Path, title: str, groups: list[str],
                 panels: list[tuple[str, dict[str, list[float | None]]]]) -> Path:
    """One panel per ``(ylabel, {bar label: value per group})``, log y (costs span orders
    of magnitude), a value ``None`` left out; ``groups`` label the x axis."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.4), squeeze=False)
    for ax, (ylabel, bars) in zip(axes[0], panels):
        width = 0.8 / max(len(bars), 1)
        for i, (label, values) in enumerate(bars.items()):
            xs = [g + i * width for g, v in enumerate(values) if v]
            ax.bar(xs, [v for v in values if v], width, label=label)
        ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))])
        ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    return _save(fig, path)
