"""Migration m010: the character memory's tables (issue 43; PyraVid's character memory,
M3-Agent's face/voice-grounded entities), their SQL exactly as shipped.

- ``identities``: one row per person the memory knows (a *person node* of the pyramid): a
  ``name`` the user gave (``NULL`` while unnamed; unique, any case) and a name
  ``suggested`` from what was said while only this face was on screen, never applied
  silently. First and last seen are derived from the appearances (timeline seconds).
- ``appearances``: a face or a voice of an identity — in a clip (its source, seconds into the
  source, quality, the face crop's path under ``<memory>.frames/``, the words of a voice
  turn) or ``enrolled`` from a photo or recording the user gave (``file``; no clip).
- ``face_vec`` (128-d dlib descriptors, Euclidean) and ``voice_vec`` (256-d GE2E
  embeddings, cosine): one vector per appearance, keyed by its id.
- ``links`` is rebuilt so that a ``person`` node may be a link's end: a hierarchical
  person→clip link per clip an identity appears in (weight: its appearances there), as
  PyraVid links its nodes (§3.2).

The store side is :mod:`edge.store.people`; the clustering and matching, :mod:`edge.people`.
"""

from __future__ import annotations

FACE_VEC_DIM = 128
"""Width of a face vector (dlib's ResNet descriptor, float32)."""
VOICE_VEC_DIM = 256
"""Width of a voice vector (GE2E speaker embedding, float32, unit length)."""

_M010_TABLES = """
        CREATE TABLE identities(
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a forgotten id stays gone
            name TEXT,                        -- given by the user; NULL while unnamed
            suggested_name TEXT,              -- from captions/transcripts; never applied
            suggested_clips INTEGER NOT NULL DEFAULT 0,  -- clips the suggestion rests on
            created REAL NOT NULL             -- Unix seconds
        );
        CREATE UNIQUE INDEX identities_by_name ON identities(name COLLATE NOCASE)
            WHERE name IS NOT NULL;
        CREATE TABLE appearances(
            id INTEGER PRIMARY KEY,
            identity_id INTEGER NOT NULL REFERENCES identities(id),
            kind TEXT NOT NULL CHECK (kind IN ('face', 'voice')),
            source_id INTEGER REFERENCES sources(id),  -- NULL when enrolled
            clip_id INTEGER REFERENCES clips(id),      -- NULL when enrolled
            t REAL,                           -- seconds into the source (first frame / turn start)
            t_end REAL,                       -- seconds into the source (last frame / turn end)
            quality REAL NOT NULL,            -- 0-1
            crop TEXT,                        -- face crop JPEG under <memory>.frames/, or NULL
            text TEXT NOT NULL DEFAULT '',    -- voice: the words of the turn
            enrolled INTEGER NOT NULL DEFAULT 0,  -- 1: from a photo/recording the user gave
            file TEXT                         -- enrolled: the file it came from
        );
        CREATE INDEX appearances_by_identity ON appearances(identity_id, kind);
        CREATE INDEX appearances_by_clip ON appearances(clip_id);
        CREATE TABLE links_person(
            id INTEGER PRIMARY KEY,
            src_kind TEXT NOT NULL CHECK (src_kind IN ('fact', 'clip', 'global', 'person')),
            src_id INTEGER NOT NULL,
            dst_kind TEXT NOT NULL CHECK (dst_kind IN ('fact', 'clip', 'global', 'person')),
            dst_id INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('hierarchical', 'relational')),
            weight REAL NOT NULL DEFAULT 1,
            relation TEXT NOT NULL DEFAULT '',
            UNIQUE(src_kind, src_id, dst_kind, dst_id, kind)
        );
        INSERT INTO links_person SELECT id, src_kind, src_id, dst_kind, dst_id, kind, weight,
            relation FROM links;
        DROP TABLE links;
        ALTER TABLE links_person RENAME TO links;
        CREATE INDEX links_by_dst ON links(dst_kind, dst_id);
        """

_M010_VECTORS = f"""
        CREATE VIRTUAL TABLE face_vec USING vec0(
            appearance_id INTEGER PRIMARY KEY,
            embedding FLOAT[{FACE_VEC_DIM}] distance_metric=l2
        );
        CREATE VIRTUAL TABLE voice_vec USING vec0(
            appearance_id INTEGER PRIMARY KEY,
            embedding FLOAT[{VOICE_VEC_DIM}] distance_metric=cosine
        );
        """


def m010_people(db) -> None:
    """Character memory (issue 43): identities (person nodes), their face and voice
    appearances, the vectors of each (``face_vec`` 128-d L2, ``voice_vec`` 256-d cosine),
    and ``links`` rebuilt to admit person→clip links (its rows copied as they are)."""
    db.execute(_M010_TABLES)
    db.execute(_M010_VECTORS)
