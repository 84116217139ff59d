"""Widgets of the chat, split by screen area."""
