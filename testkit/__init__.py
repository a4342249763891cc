"""Helpers for the test suite and the benchmarks, kept out of the installed packages: a
local HTTP server speaking the OpenAI and Anthropic APIs (`mock_api`), hand-built and
random game logs emitted through the typed events (`logs`: a flat-plane scene for
deception, a skeld scene for the audit), whole fake-world games played once per test
run and shared by the tests that read them (`games`), a game that probes its engine's
live state at every step (`probe`), and a headless-Chromium driver for the viewer
(`browser`). Import them from a checkout's root (`python -m pytest`,
`python -m benchmarks....`)."""
