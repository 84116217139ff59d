"""Follow one string field of a JSON object while the object is still being written.

A solver that streams its reply (``LlamaCppLLM.chat_json(..., on_token=...)``) writes a JSON
object token by token; the user wants to read the ``"answer"`` text as it appears, not the
JSON around it. :class:`JsonFieldStream` is the pure, incremental decoder for that: feed it
the streamed pieces, it hands the newly decoded characters of one top-level string field to
a callback. Also importable as ``models.llm.JsonFieldStream``.
"""

from __future__ import annotations

from collections.abc import Callable

_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t"}


class JsonFieldStream:
    """Decode the value of the top-level string field ``field`` from a JSON object that
    arrives in pieces (``feed``); ``on_text(chars)`` gets the characters decoded from each
    piece (never an empty string), on the feeding thread.

    Pieces may split anywhere: inside the key, inside an escape (``\\"``, ``\\n``,
    ``\\u00e9``, a ``\\ud83d\\ude00`` surrogate pair). Only the outermost object's key
    counts (a nested ``"answer"`` or the text ``"answer":`` inside another string does not);
    the first occurrence wins. A field whose value is not a string yields nothing. The input
    is not validated: after malformed JSON the output is whatever was decoded so far
    (the caller validates the whole reply anyway). A lone surrogate escape decodes to
    U+FFFD. ``text`` is everything decoded so far; ``done`` turns true at the closing quote.
    """

    def __init__(self, field: str, on_text: Callable[[str], None] | None = None) -> None:
        self.field = field
        self.on_text = on_text
        self.text = ""
        self.done = False
        self._stack: list[str] = []  # open containers: "{" or "["
        self._expect_key = False     # the next string in the current object is a key
        self._in_string = False
        self._is_key = False         # the open string is a key of the outermost object
        self._capture = False        # the open string is the field's value
        self._want_value = False     # the last key was ``field``: its value comes next
        self._buf: list[str] = []    # the decoded open string (key or captured value)
        self._esc = ""               # a pending escape: "\\" or "\\u" plus hex digits
        self._high = ""              # a high surrogate waiting for its low half

    def feed(self, piece: str) -> None:
        """Consume the next piece of the JSON text."""
        if self.done:
            return
        out: list[str] = []
        for ch in piece:
            if self._in_string:
                self._string_char(ch, out)
            else:
                self._structure_char(ch)
            if self.done:
                break
        new = "".join(out)
        if new:
            self.text += new
            if self.on_text is not None:
                self.on_text(new)

    def _structure_char(self, ch: str) -> None:
        """A character outside any string: track containers and the key/value position."""
        if ch == '"':
            self._in_string = True
            top = len(self._stack) == 1 and self._stack[0] == "{"
            self._is_key = top and self._expect_key
            self._capture = top and self._want_value and not self._is_key
            self._want_value = False
            self._buf = []
        elif ch in "{[":
            self._want_value = False
            self._stack.append(ch)
            self._expect_key = ch == "{"
        elif ch in "}]":
            if self._stack:
                self._stack.pop()
            self._expect_key = False
        elif ch == ",":
            self._expect_key = bool(self._stack) and self._stack[-1] == "{"
            self._want_value = False
        elif not ch.isspace() and ch != ":":
            self._want_value = False  # a number, true/false/null: not a string value

    def _string_char(self, ch: str, out: list[str]) -> None:
        """A character inside a string: decode escapes; keep it when it belongs to a key of
        the outermost object or to the field's value."""
        if self._esc:
            self._esc += ch
            if self._esc[1] == "u" and len(self._esc) < 6:
                return  # \uXXXX still incomplete
            decoded, self._esc = _decode_escape(self._esc), ""
        elif ch == "\\":
            self._esc = "\\"
            return
        elif ch == '"':
            self._close_string(out)
            return
        else:
            decoded = ch
        decoded = self._join_surrogates(decoded)
        if self._capture:
            out.append(decoded)
        elif self._is_key:
            self._buf.append(decoded)

    def _join_surrogates(self, ch: str) -> str:
        """``ch`` with a waiting high surrogate joined to it: "" while a high surrogate
        waits for its low half, U+FFFD for a half without its partner."""
        text = ""
        if self._high:
            if "\udc00" <= ch <= "\udfff":
                pair = 0x10000 + ((ord(self._high) - 0xD800) << 10) + (ord(ch) - 0xDC00)
                self._high = ""
                return chr(pair)
            text, self._high = "\ufffd", ""
        if "\ud800" <= ch <= "\udbff":
            self._high = ch
            return text
        if "\udc00" <= ch <= "\udfff":
            return text + "\ufffd"
        return text + ch

    def _close_string(self, out: list[str]) -> None:
        if self._high:
            if self._capture:
                out.append("\ufffd")
            self._high = ""
        self._in_string = False
        if self._capture:
            self._capture = False
            self.done = True
        elif self._is_key:
            self._want_value = "".join(self._buf) == self.field
            self._expect_key = False
        self._is_key = False


def _decode_escape(esc: str) -> str:
    """The character a complete escape (``\\n``, ``\\u00e9``; a surrogate half as is) stands
    for; U+FFFD for bad hex digits."""
    if esc[1] != "u":
        return _SIMPLE_ESCAPES.get(esc[1], esc[1])
    try:
        return chr(int(esc[2:6], 16))
    except ValueError:
        return "\ufffd"
