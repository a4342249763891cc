"""The grounding wing: each player's trajectory rebuilt from a run, the claims extracted
from what players said (by rules or by the extractor model and its prompt), the audit of
each claim against the trajectory, the rule books that judge a claim, and the grounding
metrics and report sections computed from the audited claims."""
