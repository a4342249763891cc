"""The game viewer: a local web page to watch a game live, replay any step, and label
deception atoms by hand. It reads only the run folder (see `annotation.viewer.record`)."""
