"""Old module path, kept as an alias: the spool now lives in :mod:`edge.record.spool` and the
status file in :mod:`edge.record.status`; import from :mod:`edge.record`. Remove once nothing
imports ``edge.spool`` (edge/cli.py and tests/test_model_setup_errors.py did)."""

from edge.record.spool import (  # noqa: F401 (re-exported)
    CLIP_PREFIX,
    CLIP_SUFFIX,
    MIN_REPAIR_SECONDS,
    PART_SUFFIX,
    ClipFile,
    Deletion,
    clip_name,
    clip_start,
    finished_clips,
    fsync_path,
    iso_utc,
    partial_clips,
    plan_retention,
    publish,
    repair,
    spool_dir,
)
from edge.record.status import read_status, status_path, write_status  # noqa: F401
