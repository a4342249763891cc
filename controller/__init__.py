"""The game controller: rules engine, step loop, worlds, event log and CLI."""
