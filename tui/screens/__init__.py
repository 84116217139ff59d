"""The chat's screens: chat (default), timeline, one clip, help."""
