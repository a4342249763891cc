"""The `reference` judge profile: the authors' deception judge, run on our records.

`transcript` writes a game's event log as text in the line format of the authors'
`game.log`, keeping only the line kinds their judge keeps; `labels` normalises the
labels a judge emits to the paper's letters; `prompts` builds the two passes' prompts
(our own words, carrying the facts of their codebook and rules); `judge` runs the two
passes and keeps every finding as emitted, with the grounded checks' verdict beside it.
"""
