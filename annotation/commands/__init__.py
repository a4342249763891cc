"""The subcommands of `mineamongus` that the annotation package owns: `annotate`,
`analyze`, `audit` and `view`, one module each, each a `controller.commands.Command`
named in the `mineamongus.commands` entry-point group of `pyproject.toml`; and the live
viewer of `play --view` and `tournament --view` (group `mineamongus.viewers`,
`view.start_live`).

Each module imports only argparse's needs at its top (`mineamongus --help` loads them
all); the analysis, the judge and the viewer are imported when the command runs.
"""
