"""The commands' progress lines on stderr (every subcommand of app/cli.py and its helpers)."""

from __future__ import annotations

import sys
import time


class Progress:
    """`progress("text")` prints "pte-webgpu: [  1.2 s] text" on stderr unless quiet."""

    def __init__(self, quiet: bool):
        self.quiet, self.started = quiet, time.perf_counter()

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(f"pte-webgpu: [{time.perf_counter() - self.started:5.1f} s] {text}",
                  file=sys.stderr, flush=True)
