"""The deception wing: the codebook of deception atoms (`atoms.yaml`), the rendering of a
game into the lines a judge reads, the LLM judge and its prompts, the rule-based
detectors, the findings they produce, human labels and judge-human agreement, and the
`annotate` driver that runs them over a set of games."""
