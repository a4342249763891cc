"""Test helpers that ship with the package: a local server speaking the providers' APIs."""
