"""The report wing: the analysis that turns annotated games into tables and figures, the
report document model and its Markdown/HTML writers with their pluggable section
providers (`document`), and the generator that keeps `docs/annotation.md` in step with
the codebook (`docs`)."""
