"""What several test modules share: the fixture index, graph builders, reference checks,
the GPU thread. No test module imports another; they import from here."""
