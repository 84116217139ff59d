"""Build, the deferred LLM tier: the memory LLM turns each stored clip's caption text into
MERIT keys and PyraVid fact, clip and global nodes with their links, in clip order from the
build queue, one builder per memory."""
