"""``python -m pte_webgpu``: the command line."""

import sys

from .cli import main

sys.exit(main())
