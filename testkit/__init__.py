"""Helpers for the test suite and the benchmarks, kept out of the installed packages: a
local HTTP server speaking the OpenAI and Anthropic APIs (`mock_api`), game-log builders
that emit through the typed events (`synthetic` for deception, `grounding` for the
audit), and a headless-Chromium driver for the viewer (`browser`). Import them from a
checkout's root (`python -m pytest`, `python -m benchmarks....`)."""
