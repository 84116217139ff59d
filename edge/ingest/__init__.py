"""Ingest, the real-time tier: each source (a video file, a recorded clip, a caption file)
is decoded, perceived (transcript, keyframes, caption) and written clip by clip by the
memory writer, its LLM work queued for :mod:`edge.build`."""
