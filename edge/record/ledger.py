"""Progress per file cut into clips, in ``<spool>/watched.json``, so a restart resumes a file
where the last run's clips end instead of recording it again.

Two kinds of entries: a watched file (``--watch``) under its resolved path, and a file source
(``--url FILE``) under ``sha256:<hex>`` of its bytes (:func:`file_key`, the identity ``edge
ingest`` knows a source by), so the same file recorded again under another name is still
recognised.

The ledger is written ahead of the spool (:class:`~edge.record.segmenter.Segmenter`): a
``.part`` clip is created only after the ledger names it (so a restart discards it and cuts
that footage again, instead of repairing it into a second copy), and a clip is published
only after the ledger says its footage is done (so a restart never cuts it again). Each save
is fsynced, so a power cut cannot undo it either. A save that fails (a full disk) raises
before the spool changes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE_KEY_PREFIX = "sha256:"


def file_key(path: Path) -> str:
    """The ledger key of a file source: ``sha256:`` and the hex SHA-256 of its bytes (read
    in blocks; about 1 s per GB). Raises :class:`OSError` when the file cannot be read."""
    from edge.ingest.run import file_sha256

    return FILE_KEY_PREFIX + file_sha256(Path(path))


class WatchLedger:
    """Progress per file, in ``<spool>/watched.json``: for each file (a watched file's
    resolved path, or a file source's :func:`file_key`) ``done_until`` (source seconds
    already cut into clips), ``origin`` (Unix seconds the file's start is placed at), ``part``
    (the ``.part`` clip being cut from it, named before it is created; ``None`` once its
    footage is done), ``complete``; a watched file also has ``sig``
    (size in bytes, mtime in ns) and, when it could not be read, ``error``; a file source
    has ``path`` (where it was first recorded from)."""

    def __init__(self, spool: Path) -> None:
        self.path = spool / "watched.json"
        self.entries: dict[str, dict] = (json.loads(self.path.read_text())
                                         if self.path.exists() else {})

    def save(self, key: str, entry: dict) -> None:
        """Set the entry of one file and rewrite the ledger atomically and durably
        (temporary file, fsync, rename, fsync of the folder). Raises :class:`OSError`
        (``ENOSPC`` on a full disk): the ledger on disk is then the previous one."""
        from edge.record.spool import fsync_path

        self.entries[key] = entry
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(self.entries, indent=1))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fsync_path(self.path.parent, directory=True)

    def unfinished_parts(self) -> dict[str, str]:
        """``.part`` name → ledger key, for the files that were being cut when the recorder
        stopped without closing its clip."""
        return {e["part"]: k for k, e in self.entries.items()
                if e.get("part") and not e.get("complete")}

    def name_of(self, key: str) -> str:
        """A file's name for the log: its file name (a file source: where it was first
        recorded from)."""
        return Path(self.entries.get(key, {}).get("path") or key).name

    def repaired(self, key: str, clip: Path | None) -> None:
        """The half-written clip of a file source that is not recorded now was repaired
        into ``clip`` (``None``: discarded): the file resumes after the repaired footage."""
        from edge.ingest.media import probe
        from edge.record.spool import clip_start

        entry = dict(self.entries[key], part=None)
        if clip is not None and "origin" in entry:
            end = clip_start(clip) - entry["origin"] + probe(clip).duration
            entry["done_until"] = max(entry["done_until"], end)
        self.save(key, entry)
