"""Mutation fuzzing of the readers over the real fixtures (see run.py, test_fuzz_short.py)."""
