"""The errors a user can meet, in one place: the CLI and the chat both turn these into one
clear line (what went wrong, what to do) instead of a traceback.

Every error class of ``edge`` derives from :class:`EdgeError` and is defined here, so a
caller catches :data:`USER_ERRORS` without importing the module that raised it. Errors of
the model setup come from ``models`` (dependencies point ``edge → models``).
"""

from __future__ import annotations

from models import ConfigError, UnknownModelError, WeightsCorruptError, WeightsMissingError


class EdgeError(Exception):
    """Base of every error ``edge`` raises on purpose; the message is meant for the user."""


class AskError(EdgeError):
    """The question cannot be asked of this memory (empty memory, nothing in the scope)."""


class CaptionFileError(EdgeError, ValueError):
    """The caption file is not in the expected format; the message names the record."""


class BenchError(EdgeError, ValueError):
    """A benchmark run that cannot start: a question file not in the EgoLifeQA format (the
    message names the record and the field), or a ``--set`` that names no option."""


class MediaError(EdgeError):
    """A file that cannot be read as video or audio; the message says why and what to do."""


class CaptureError(EdgeError):
    """A source that cannot be opened or read; the message says what to check."""


class RecordError(EdgeError):
    """The recorder cannot start (disk below the floor, another recorder, bad source)."""


class BuildBusyError(EdgeError):
    """Another process (an ``edge build``, an ingest building its LLM tier, a recorder)
    holds the memory's build lock; the clips stay queued."""


class StoreError(EdgeError):
    """The memory file cannot be opened or written; the message says what to do."""


class InputError(EdgeError, ValueError):
    """Text the user typed that cannot be used as it is, whatever the memory holds (a
    question that is not valid UTF-8): one line and exit code 2 in the CLI, as for a bad
    option."""


class TimeParseError(InputError):
    """A moment the user typed that we cannot read; the message shows accepted forms."""


class QuestionError(AskError, InputError):
    """A question or its ``--choices`` as typed that no memory could answer: empty, too
    long for the solver, fewer than 2 or an empty option (exit code 2 in the CLI)."""


def require_utf8(text: str, what: str) -> str:
    """``text`` unchanged when it is valid Unicode; raises :class:`InputError` naming
    ``what`` (``the question``, ``option 2``) when it holds bytes that were not UTF-8 (the
    shell hands Python such bytes as lone surrogates, which no model or SQLite can take)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} is not valid UTF-8 text; type it again, or check the "
                         "terminal's encoding (locale)") from None
    return text


MODEL_ERRORS: tuple[type[Exception], ...] = (
    ConfigError, UnknownModelError, WeightsCorruptError, WeightsMissingError)
"""Errors of the model setup (weights not downloaded, a bad profile, a remote server that
cannot be reached): they stop an ingest instead of failing every file the same way, and
keep a recorder's clips pending."""

USER_ERRORS: tuple[type[Exception], ...] = (EdgeError, *MODEL_ERRORS)
"""Everything the CLI and the chat show as one line (exit code 1 in the CLI)."""

__all__ = [
    "MODEL_ERRORS",
    "USER_ERRORS",
    "AskError",
    "InputError",
    "require_utf8",
    "BenchError",
    "BuildBusyError",
    "CaptionFileError",
    "CaptureError",
    "EdgeError",
    "MediaError",
    "QuestionError",
    "RecordError",
    "StoreError",
    "TimeParseError",
]
