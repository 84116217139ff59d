"""The Textual chat application (edge chat). Talks to edge/ only through its public API."""
