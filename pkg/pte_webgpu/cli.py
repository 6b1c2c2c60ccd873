"""Command line: ``pte-webgpu inspect | run | serve``.

Bad input ends with exit code 2 and one readable line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

from .errors import PteError

EXIT_BAD_INPUT = 2


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise PteError(f"cannot read {path}: {e.strerror}") from None


def cmd_inspect(args) -> int:
    from . import formats, inspect

    data = _read(args.file)
    files = [(p.rsplit("/", 1)[-1], _read(p)) for p in args.data]
    program = formats.open_program(data, files)
    report = inspect.describe(program, args.file, len(data))
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(inspect.render_text(report))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pte-webgpu", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="describe a .pte file (header, plans, delegates, graph)")
    p.add_argument("file")
    p.add_argument("--data", action="append", default=[], metavar="F.ptd",
                   help="external data file (repeatable); consulted before the .pte")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_inspect)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except PteError as e:
        print(f"pte-webgpu: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
