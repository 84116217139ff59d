"""Old module path, kept as an alias: capture now lives in :mod:`edge.record.capture` and
:mod:`edge.record.segmenter`; import from :mod:`edge.record`. Remove once nothing imports
``edge.capture`` (edge/cli.py did)."""

from edge.errors import CaptureError  # noqa: F401 (re-exported)
from edge.record.capture import SourceSpec, open_source  # noqa: F401
from edge.record.segmenter import (  # noqa: F401
    RAW_VIDEO_CODECS,
    Segmenter,
    fits_matroska,
    pick_encoder,
)
