"""Running the CLI in a subprocess, and the check that a user error exits 2 with one line."""

import subprocess
import sys


def cli_run(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "pte_webgpu", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def one_line_exit_2(done, *fragments):
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "launching Chromium" not in done.stderr
    for fragment in fragments:
        assert fragment in done.stderr
