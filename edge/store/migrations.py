"""The memory file's schema as named, append-only migrations (simonw/llm style): their SQL,
exactly as shipped, and :data:`MIGRATIONS`, which :func:`edge.store.schema.apply_migrations`
applies and records in ``_migrations``.

Never edit the SQL of a shipped migration: add a new step to :data:`MIGRATIONS` instead. A
memory built by any earlier version is brought up to date on open; a test checks that one
migrated from m001 has exactly the schema of a fresh one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from edge.store.entities import fill_entities
from edge.store.people_schema import m010_people
from edge.store.records import EMBED_DIM
from edge.store.scope import sql_day

# ---- the migrations' SQL, exactly as shipped ---------------------------------------------

_M001_TABLES = """
        CREATE TABLE sources(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,               -- video | audio | captions
            clock TEXT NOT NULL,              -- wall | dayclock
            start_from TEXT NOT NULL,         -- metadata | --start | mtime | file
            t_start REAL NOT NULL,
            duration REAL NOT NULL,
            n_clips INTEGER NOT NULL,
            status TEXT NOT NULL,             -- ingesting | done
            added_at REAL NOT NULL,
            info TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE clips(
            id INTEGER PRIMARY KEY,
            source_id INTEGER NOT NULL REFERENCES sources(id),
            idx INTEGER NOT NULL,
            t_start REAL NOT NULL,
            t_end REAL NOT NULL,
            day TEXT NOT NULL,
            day_start REAL NOT NULL,
            caption TEXT NOT NULL,
            transcript TEXT NOT NULL DEFAULT '',
            keyframes TEXT NOT NULL DEFAULT '[]',
            signals TEXT NOT NULL DEFAULT '{}',
            UNIQUE(source_id, idx)
        );
        CREATE INDEX clips_by_time ON clips(t_start);
        CREATE INDEX clips_by_day ON clips(day, t_start);
        CREATE TABLE keys(
            id INTEGER PRIMARY KEY,
            clip_id INTEGER NOT NULL REFERENCES clips(id),
            type TEXT NOT NULL CHECK (type IN ('event','dialogue','object','summary','caption')),
            text TEXT NOT NULL,
            origin TEXT NOT NULL,             -- llm | extractive | file | caption
            UNIQUE(clip_id, type)
        );
        CREATE TABLE calls(
            id INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            command TEXT NOT NULL,
            role TEXT NOT NULL,
            model TEXT NOT NULL,
            tokens_in INTEGER NOT NULL,
            tokens_out INTEGER NOT NULL,
            seconds REAL NOT NULL
        );
        """

_M001_KEY_VEC = f"""
        CREATE VIRTUAL TABLE key_vec USING vec0(
            key_id INTEGER PRIMARY KEY,
            key_type TEXT PARTITION KEY,
            clip_end FLOAT,
            embedding FLOAT[{EMBED_DIM}] distance_metric=cosine
        )
        """

_M002_CLIP_TEXT = """
        CREATE VIRTUAL TABLE clip_text USING fts5(
            caption, transcript, keys,
            tokenize = 'unicode61 remove_diacritics 2'
        )
        """

_M002_BACKFILL = (
    "INSERT INTO clip_text(rowid, caption, transcript, keys) "
    "SELECT c.id, c.caption, c.transcript, coalesce(group_concat(k.text, ' | '), '') "
    "FROM clips c LEFT JOIN keys k ON k.clip_id = c.id AND k.type != 'caption' "
    "GROUP BY c.id"
)

_M003_TABLES = """
        CREATE TABLE facts(
            id INTEGER PRIMARY KEY,
            clip_id INTEGER NOT NULL REFERENCES clips(id),
            t_start REAL NOT NULL,            -- timeline seconds, inside the clip
            t_end REAL NOT NULL,
            text TEXT NOT NULL,
            kind TEXT NOT NULL,               -- action | speech | object | person | scene
            names TEXT NOT NULL DEFAULT '[]', -- names mentioned (JSON list)
            keyframe TEXT,                    -- path under <memory>.frames/, NULL without video
            origin TEXT NOT NULL              -- llm | extractive
        );
        CREATE INDEX facts_by_clip ON facts(clip_id);
        CREATE TABLE nodes_clip(
            clip_id INTEGER PRIMARY KEY REFERENCES clips(id),
            summary TEXT NOT NULL,
            scene TEXT NOT NULL,
            origin TEXT NOT NULL              -- llm | extractive
        );
        CREATE TABLE nodes_global(
            id INTEGER PRIMARY KEY,
            scope TEXT NOT NULL CHECK (scope IN ('day', 'all')),
            day TEXT NOT NULL,                -- the day label, or '' for scope 'all'
            version INTEGER NOT NULL,
            text TEXT NOT NULL,
            clip_count INTEGER NOT NULL,      -- clips integrated so far (this and older versions)
            t_upto REAL NOT NULL,             -- end of the last clip integrated (timeline s)
            origin TEXT NOT NULL,             -- llm | extractive
            updated REAL NOT NULL,            -- Unix time of this version
            UNIQUE(scope, day, version)
        );
        CREATE TABLE links(
            id INTEGER PRIMARY KEY,
            src_kind TEXT NOT NULL CHECK (src_kind IN ('fact', 'clip', 'global')),
            src_id INTEGER NOT NULL,
            dst_kind TEXT NOT NULL CHECK (dst_kind IN ('fact', 'clip', 'global')),
            dst_id INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('hierarchical', 'relational')),
            weight REAL NOT NULL DEFAULT 1,
            relation TEXT NOT NULL DEFAULT '',
            UNIQUE(src_kind, src_id, dst_kind, dst_id, kind)
        );
        CREATE INDEX links_by_dst ON links(dst_kind, dst_id);
        CREATE VIRTUAL TABLE fact_text USING fts5(
            text, tokenize = 'unicode61 remove_diacritics 2'
        );
        DROP TABLE clip_text;
        CREATE VIRTUAL TABLE clip_text USING fts5(
            caption, transcript, keys, facts,
            tokenize = 'unicode61 remove_diacritics 2'
        );
        """

_M003_BACKFILL = (
    "INSERT INTO clip_text(rowid, caption, transcript, keys, facts) "
    "SELECT c.id, c.caption, c.transcript, coalesce(group_concat(k.text, ' | '), ''), '' "
    "FROM clips c LEFT JOIN keys k ON k.clip_id = c.id AND k.type != 'caption' "
    "GROUP BY c.id"
)

_M003_FACT_VEC = f"""
        CREATE VIRTUAL TABLE fact_vec USING vec0(
            fact_id INTEGER PRIMARY KEY,
            day TEXT,
            clip_end FLOAT,
            embedding FLOAT[{EMBED_DIM}] distance_metric=cosine
        )
        """

_M004_RUNS = """
        CREATE TABLE runs(
            id INTEGER PRIMARY KEY,
            command TEXT NOT NULL,
            started_at REAL NOT NULL,
            seconds REAL NOT NULL,            -- wall-clock seconds of the whole run
            media_seconds REAL NOT NULL,      -- footage processed (clips added), seconds
            clips_added INTEGER NOT NULL,
            sources INTEGER NOT NULL,         -- inputs seen (ingested, resumed, skipped, failed)
            status TEXT NOT NULL              -- done | interrupted | failed
        );
        CREATE TABLE run_stages(
            run_id INTEGER NOT NULL REFERENCES runs(id),
            stage TEXT NOT NULL,              -- load | decode | asr | caption | memory_llm | ...
            seconds REAL NOT NULL,
            PRIMARY KEY(run_id, stage)
        );
        ALTER TABLE calls ADD COLUMN run_id INTEGER;
        """

_M006_ENTITIES = """
        CREATE TABLE entities(
            id INTEGER PRIMARY KEY,
            entity TEXT NOT NULL,             -- lowercased: alice, power bank, kitchen
            kind TEXT NOT NULL CHECK (kind IN ('person', 'name', 'object', 'place')),
            clip_id INTEGER NOT NULL REFERENCES clips(id),
            t_start REAL NOT NULL,            -- the clip's times (timeline seconds)
            t_end REAL NOT NULL,
            count INTEGER NOT NULL DEFAULT 1, -- mentions in the clip's texts
            UNIQUE(entity, kind, clip_id)
        );
        CREATE INDEX entities_by_clip ON entities(clip_id);
        """

_M007_BUILD_QUEUE = """
        CREATE TABLE build_queue(
            clip_id INTEGER PRIMARY KEY REFERENCES clips(id),
            keys INTEGER NOT NULL,            -- 1: the four MERIT keys are still to extract
            pyramid INTEGER NOT NULL,         -- 1: facts, clip node, links, global updates
            enqueued_at REAL NOT NULL         -- Unix seconds
        );
        CREATE TABLE builds(
            id INTEGER PRIMARY KEY,
            clip_id INTEGER NOT NULL REFERENCES clips(id),
            keys INTEGER NOT NULL,            -- what this build did (as in build_queue)
            pyramid INTEGER NOT NULL,
            seconds REAL NOT NULL,            -- wall seconds of the clip's LLM tier
            built_at REAL NOT NULL            -- Unix seconds
        );
        CREATE INDEX builds_by_clip ON builds(clip_id);
        """

_M008_KEY_VEC = f"""
        CREATE VIRTUAL TABLE key_vec USING vec0(
            key_id INTEGER PRIMARY KEY,
            key_type TEXT PARTITION KEY,
            day INTEGER PARTITION KEY,        -- floor(clip_end / 86400): the timeline day
            clip_end FLOAT,
            embedding FLOAT[{EMBED_DIM}] distance_metric=cosine,
            chunk_size=128
        )
        """

_M008_COPY = """
        CREATE TEMP TABLE _key_vec_copy AS
            SELECT key_id, key_type, clip_end, embedding FROM key_vec;
        DROP TABLE key_vec;
        """

_M008_FILL = """
        INSERT INTO key_vec(key_id, key_type, day, clip_end, embedding)
            SELECT key_id, key_type, {day}, clip_end, embedding FROM temp._key_vec_copy
            ORDER BY key_type, clip_end, key_id;
        DROP TABLE temp._key_vec_copy;
        """

_M009_VECTOR_SPACES = """
        CREATE TABLE vector_spaces(
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: names the tables
            embedder TEXT NOT NULL,           -- the model that wrote the vectors
            dim INTEGER NOT NULL,             -- float32 values a vector
            key_table TEXT NOT NULL UNIQUE,   -- vec0 table of key vectors
            fact_table TEXT NOT NULL UNIQUE,  -- vec0 table of fact vectors
            state TEXT NOT NULL UNIQUE CHECK (state IN ('active', 'building')),
            key_upto INTEGER NOT NULL DEFAULT 0,   -- building: keys with id <= this done
            fact_upto INTEGER NOT NULL DEFAULT 0,  -- building: facts with id <= this done
            created_at REAL NOT NULL          -- Unix seconds
        );
        """


def key_vec_sql(table: str, dim: int) -> str:
    """``CREATE`` of a key-vector table as m008 shaped ``key_vec`` (partitions by key type
    and timeline day, the clip's end as metadata, 128-vector chunks), ``dim`` wide."""
    return _M008_KEY_VEC.replace("key_vec", table).replace(f"[{EMBED_DIM}]", f"[{dim}]")


def fact_vec_sql(table: str, dim: int) -> str:
    """``CREATE`` of a fact-vector table as m003 shaped ``fact_vec``, ``dim`` wide."""
    return _M003_FACT_VEC.replace("fact_vec", table).replace(f"[{EMBED_DIM}]", f"[{dim}]")


# ---- the migrations ----------------------------------------------------------------------

def _m001_initial(db) -> None:
    """Sources, clips, keys (MERIT Eq. 5), model calls, and ``key_vec``: one 384-d cosine
    vector per key, partitioned by key type, with the clip's end for time-scoped KNN."""
    db.execute(_M001_TABLES)
    db.execute(_M001_KEY_VEC)


def _m002_clip_text_fts(db) -> None:
    """FTS5 (BM25) over each clip's caption, transcript and key texts; backfills old clips."""
    db.execute(_M002_CLIP_TEXT)
    db.execute(_M002_BACKFILL)


def _m003_pyramid(db) -> None:
    """The PyraVid pyramid (PyraVid §3.2, App. B.3): fact nodes, clip nodes, versioned global
    nodes, hierarchical/relational links, fact vectors, and fact text in the FTS index."""
    db.execute(_M003_TABLES)
    db.execute(_M003_BACKFILL)
    db.execute(_M003_FACT_VEC)


def _m004_runs(db) -> None:
    """Cost accounting per run (issue 3 item 6): wall seconds per ingest stage and the
    seconds of footage processed, so ``edge stats`` can report real-time factors; calls gain
    the run they belong to (NULL for calls stored before this migration)."""
    db.execute(_M004_RUNS)


def _m005_clip_added_at(db) -> None:
    """When each clip was stored (Unix seconds; NULL for clips stored before this
    migration), so the last ingest is the last clip written — also by a run that resumed a
    source registered days ago — not the last source registered."""
    db.execute("ALTER TABLE clips ADD COLUMN added_at REAL")


def _m006_entities(db) -> None:
    """The entity-time index (issue 11; EGAgent's entity graph in SQL): people, names,
    objects and places per clip with the clip's times; filled for the clips already stored
    (rules only, :func:`edge.store.entities.fill_entities`: ~0.2 ms a clip)."""
    db.execute(_M006_ENTITIES)
    fill_entities(db)


def _m007_build_queue(db) -> None:
    """Two tiers of memory construction (issue 13): ``build_queue`` holds, per clip stored
    by the real-time tier, the LLM work still to do (keys, pyramid); ``builds`` records
    each clip's build and its wall seconds (for the ETA). Clips stored before this
    migration were built in full and are not queued."""
    db.execute(_M007_BUILD_QUEUE)


def _m008_key_vec_days(db) -> None:
    """A year of memory (issue 13 item 3): ``key_vec`` gains a ``day`` partition key (the
    timeline day, ``floor(clip_end / 86400)``) so a time-scoped KNN reads only the days in
    scope (last 7 days at 1M vectors: 98 → 9 ms), and 128-vector chunks (a day's partial
    chunk wastes less, and one vector is read without walking a 1.5 MB blob). The vectors
    are copied into the recreated table, grouped by type and time."""
    db.execute(_M008_COPY)
    db.execute(_M008_KEY_VEC)
    db.execute(_M008_FILL.format(day=sql_day("clip_end")))


def _m009_vector_spaces(db) -> None:
    """Vectors carry their model (issue 25): ``vector_spaces`` names the embedder and width
    of the vectors in ``key_vec``/``fact_vec`` — every memory before this migration was
    embedded by MiniLM-L6 (384-d) — and holds a second, ``building`` space while
    ``edge build`` re-embeds the memory with another embedder."""
    db.execute(_M009_VECTOR_SPACES)
    db.execute("INSERT INTO vector_spaces(id, embedder, dim, key_table, fact_table, state,"
               " created_at) VALUES(1, 'minilm-l6-int8', ?, 'key_vec', 'fact_vec', 'active',"
               " ?)", (EMBED_DIM, time.time()))


MIGRATIONS: list[tuple[str, Callable]] = [
    ("m001_initial", _m001_initial),
    ("m002_clip_text_fts", _m002_clip_text_fts),
    ("m003_pyramid", _m003_pyramid),
    ("m004_runs", _m004_runs),
    ("m005_clip_added_at", _m005_clip_added_at),
    ("m006_entities", _m006_entities),
    ("m007_build_queue", _m007_build_queue),
    ("m008_key_vec_days", _m008_key_vec_days),
    ("m009_vector_spaces", _m009_vector_spaces),
    ("m010_people", m010_people),  # SQL in edge/store/people_schema.py
]
"""``(name, step)`` in order; a step takes an apsw connection. Append only."""
