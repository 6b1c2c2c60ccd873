"""Command line: ``pte-webgpu inspect | run | bench | serve | generate | convert``.

Bad input ends with exit code 2 and one readable line on stderr, the same text on
both backends; what can be checked on the host is checked before a browser or GPU
starts. Steps that may take more than a second say so on stderr (not with --quiet).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import PteError
from .progress import Progress

EXIT_BAD_INPUT = 2
EXIT_BROKEN_PIPE = 141  # what a C tool killed by SIGPIPE returns (`... | head`)


def error_text(e: PteError) -> str:
    """One line: the error's class (unless it is the plain base) and its message."""
    text = " ".join(str(e).split()) or "error"
    return text if type(e) is PteError else f"{type(e).__name__}: {text}"


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise PteError(f"cannot read {path}: {e.strerror}") from None


def cmd_inspect(args) -> int:
    from .. import formats
    from . import describe

    data = _read(args.file)
    files = [(p.rsplit("/", 1)[-1], _read(p)) for p in args.data]
    program = formats.open_program(data, files)
    report = describe.describe(program, args.file, len(data))
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(describe.render_text(report))
    return 0


def _print_run(result: dict, repeat: int) -> None:
    times = result["execute_ms"]
    print(f"adapter: {result['adapter']}")
    print(f"load: {result['load_ms']:.1f} ms")
    print(f"execute: first {times[0]:.2f} ms" + (
        f", median {result['median_execute_ms']:.2f} ms, min {min(times):.2f} ms over {repeat}"
        if repeat > 1 else ""))
    for note in result.get("notes", []):
        print(f"note: {note}")
    for k in result.get("kernels", []):
        if k.get("variant"):
            fused = f" [fused: {k['fused']}]" if "fused" in k else ""
            print(f"kernel: {k['op']}{fused} -> {k['variant']} ({k.get('picked', 'auto')})")
    for out in result["outputs"]:
        check = ""
        if "max_abs_error" in out:
            check = f"  max abs error vs {out['name']} of the inputs file: {out['max_abs_error']:.3g}"
        elif "expected_mismatch" in out:
            check = f"  not compared: {out['expected_mismatch']}"
        print(f"{out['name']}: {out['dtype']}{out['shape']}{check}")
    if result.get("profile"):
        print(render_profile(result["profile"], result.get("timestamps", False)))


def render_profile(rows: list[dict], timestamps: bool) -> str:
    """Per-op GPU time as a text table with a bar per op."""
    clock = "GPU timestamps" if timestamps else "wall time per dispatch (no timestamp-query)"
    total = sum(r["us"] for r in rows) or 1.0
    width = max([len(r["op"]) for r in rows] + [2])
    lines = [f"profile ({clock}):",
             f"  {'where':<12} {'op':<{width}} {'us':>9} {'share':>6}"]
    for r in rows:
        where = f"delegate {r['delegate']}" if r.get("delegate") is not None else "kernel"
        variant = f"  [{r['variant']}]" if r.get("variant") else ""
        lines.append(f"  {where:<12} {r['op']:<{width}} {r['us']:9.1f} {r['us'] / total:6.1%} "
                     f"{'#' * round(30 * r['us'] / total)}{variant}")
    lines.append(f"  {'total':<12} {'':<{width}} {total:9.1f}")
    return "\n".join(lines)


def _check_output(path: str | None) -> None:
    """Fail before the run, not after it, when --output cannot be written."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise PteError(f"--output {path}: folder {folder} does not exist")
    if os.path.isdir(path) or not os.access(folder, os.W_OK):
        raise PteError(f"--output {path}: cannot write there")


def cmd_run(args) -> int:
    import base64

    from .preflight import check_run

    progress = Progress(args.quiet)
    _check_output(args.output)
    pte = _read(args.file)
    data = [(os.path.basename(p), _read(p)) for p in args.data]
    inputs = _read(args.inputs) if args.inputs else None
    check_run(pte, data, inputs, cast=args.cast,
              inputs_name=os.path.basename(args.inputs) if args.inputs else "")
    if args.backend == "native":
        from . import run_job as jobs

        result = jobs.run_coroutine(jobs.run_job(pte, data, inputs, args.repeat, backend="native",
                                     profile=args.profile, cast=args.cast, progress=progress))
    else:
        from ..chromium.remote import run_in_browser

        result = run_in_browser(pte, data, inputs, args.repeat, args.profile, cast=args.cast,
                                progress=progress)
    _print_run(result, args.repeat)
    if args.output:
        try:
            with open(args.output, "wb") as f:
                f.write(base64.b64decode(result["outputs_npz_b64"]))
        except OSError as e:
            raise PteError(f"--output {args.output}: {e.strerror}") from None
        print(f"wrote {args.output}")
    return 0


def _bench_script(name: str):
    import importlib.util
    from pathlib import Path

    # bench/ sits beside pkg/ in the repository (not in the wheel); else the current folder.
    for root in (Path(__file__).resolve().parents[2], Path.cwd()):
        script = root / "bench" / f"{name}.py"
        if script.is_file():
            break
    else:
        raise PteError(f"bench/{name}.py not found: run from the pte-webgpu repository")
    spec = importlib.util.spec_from_file_location(name, script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def _contexts(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise PteError(f"--contexts {text!r}: positive whole numbers separated by commas, "
                           "e.g. 16,256,1024")
        out.append(int(part))
    return out


_NOT_WITH_LLM = ("op", "shapes", "dtypes", "variants", "roundtrip", "vision", "runs", "warmup",
                 "inputs", "onnx", "torch_model")
_NOT_WITH_VISION = ("op", "shapes", "dtypes", "variants", "roundtrip", "export_json", "onnx_dir",
                    "peer_prefill_max", "no_warmup", "profile")


def cmd_bench_llm(args) -> int:
    """``bench --llm MODEL.pte``: bench/llm_bench.py main_llm, arguments checked here."""
    from pathlib import Path

    from ..llm.bench_job import host_plan

    given = [f"--{n}" for n in _NOT_WITH_LLM if getattr(args, n) not in (None, False, "rms_norm")]
    if given:
        raise PteError(f"--llm does not take {', '.join(given)}")
    progress = Progress(args.quiet)
    _check_output(args.output)
    model = Path(args.llm)
    data = _read(args.llm)
    if model.suffix == ".gz":
        import gzip

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise PteError(f"{model}: not a readable gzip file: {e}") from None
    if args.export_json and not os.path.isfile(args.export_json):
        raise PteError(f"cannot read --export-json {args.export_json}: no such file")
    if args.peer_prefill_max is not None and args.backend != "browser":
        raise PteError("--peer-prefill-max is for --backend browser (ORT Web, transformers.js)")
    todo = host_plan(data, (), _contexts(args.contexts), args.steps)
    del data
    bench = _bench_script("llm_bench")
    try:
        export = bench.find_export(model, Path(args.export_json) if args.export_json else None)
    except ValueError as e:
        raise PteError(str(e)) from None
    return bench.main_llm(model, args.backend, todo, export=export, output=args.output,
                          plot_path=args.plot, markdown_path=args.markdown,
                          torch=not args.no_torch, web=not args.no_ort,
                          onnx_dir=Path(args.onnx_dir) if args.onnx_dir else None,
                          warmup=not args.no_warmup, profile=args.profile,
                          peer_prefill_max=args.peer_prefill_max, progress=progress)


def cmd_bench_vision(args) -> int:
    """``bench --vision MODEL.pte``: bench/vision_bench.py main_vision, arguments checked here."""
    from pathlib import Path

    given = [f"--{n.replace('_', '-')}" for n in _NOT_WITH_VISION
             if getattr(args, n) not in (None, False, "rms_norm")]
    given += [f"--{n}" for n, default in (("contexts", "16,256,1024"), ("steps", 8))
              if getattr(args, n) != default]
    if given:
        raise PteError(f"--vision does not take {', '.join(given)}")
    browser = args.backend == "browser"
    for flag, wrong in (("--onnx", args.onnx and not browser),
                        ("--torch-model", args.torch_model and browser),
                        ("--no-torch", args.no_torch and browser)):
        if wrong:
            raise PteError(f"{flag} is for --backend {'browser' if flag == '--onnx' else 'native'}")
    if args.torch_model and args.torch_model.partition(":")[2] not in ("", "ci", "full"):
        raise PteError(f"--torch-model {args.torch_model!r}: NAME, NAME:ci or NAME:full")
    for flag, path in (("--inputs", args.inputs), ("--onnx", args.onnx)):
        if path and not os.path.isfile(path):
            raise PteError(f"cannot read {flag} {path}: no such file")
    progress = Progress(args.quiet)
    _check_output(args.output)
    model = Path(args.vision)
    bench = _bench_script("vision_bench")
    try:
        pte = bench.read_program(model) if os.path.isfile(model) else _read(args.vision)
        shape, _ = bench.input_spec(pte)
        bench.image_for(shape, Path(args.inputs) if args.inputs else None)
    except (OSError, EOFError) as e:
        raise PteError(f"{model}: not a readable gzip file: {e}") from None
    except ValueError as e:
        raise PteError(str(e)) from None
    del pte
    return bench.main_vision(model, args.backend, runs=args.runs or 50,
                             warmup=10 if args.warmup is None else args.warmup,
                             inputs=Path(args.inputs) if args.inputs else None,
                             onnx=Path(args.onnx) if args.onnx else None,
                             torch_model=args.torch_model, torch=not args.no_torch,
                             ort=not args.no_ort, output=args.output, plot_path=args.plot,
                             markdown_path=args.markdown, progress=progress)


def cmd_bench(args) -> int:
    if args.llm and args.vision:
        raise PteError("--llm and --vision: one model at a time")
    if args.llm:
        return cmd_bench_llm(args)
    if args.vision:
        return cmd_bench_vision(args)
    name = ("roundtrip" if args.roundtrip else
            {"linear": "matmul_bench", "conv": "conv_bench"}.get(args.op, "rms_norm_bench"))
    bench = _bench_script(name)
    if args.roundtrip:
        if args.backend != "browser":
            raise PteError("--roundtrip measures Pyodide against plain JS: browser only")
        return bench.main(None, 200, args.output, args.markdown)
    try:
        bench.parse_shapes(args.shapes)
    except ValueError as e:
        raise PteError(str(e)) from None
    if args.op == "conv":
        dts = tuple(d.strip() for d in (args.dtypes or "float32").split(","))
        if args.backend != "native" or not set(dts) <= {"float32", "float16"}:
            raise PteError("--op conv: --backend native, --dtypes float32,float16")
        return bench.main(args.backend, args.shapes, args.output, args.plot, args.markdown,
                          args.variants, dts)
    if args.op == "linear":
        dts = tuple(d.strip() for d in (args.dtypes or "float32,float16").split(","))
        if not set(dts) <= {"float32", "float16", "q4", "q4f16"}:
            raise PteError(f"--dtypes {args.dtypes!r}: float32, float16, q4 (4-bit weights, "
                           "group 32, float32 activations), q4f16")
        return bench.main(args.backend, args.shapes, args.output, args.plot, args.markdown,
                          args.variants, dts)
    return bench.main(args.backend, args.shapes, args.output, args.plot, args.markdown,
                      args.variants, ort=not args.no_ort)


def cmd_serve(args) -> int:
    from ..chromium import paths
    from ..chromium.remote import serve_forever
    from ..llm.model_list import write_index

    llm = paths.build_dir() / "llm"
    if llm.is_dir():
        write_index(llm)  # the chat page's model picker reads /llm/models.json
    serve_forever(args.port, progress=Progress(args.quiet))
    return 0


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (exit 2), like every other user error."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def _at_least(lowest: int):
    """An argparse type: a whole number >= ``lowest``."""
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < lowest:
            raise argparse.ArgumentTypeError(f"must be at least {lowest}, got {value}")
        return value
    return convert


_count, _tokens = _at_least(1), _at_least(0)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected 0..65535 (0: any free port), got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(prog="pte-webgpu", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"pte-webgpu {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("inspect", help="describe a .pte file (header, plans, delegates, graph)")
    p.add_argument("file")
    p.add_argument("--data", action="append", default=[], metavar="F.ptd",
                   help="external data file (repeatable); consulted before the .pte")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_inspect)
    p = sub.add_parser("run", parents=[common],
                       help="run a program on WebGPU (headless Chromium, or native)")
    p.add_argument("file")
    p.add_argument("--inputs", metavar="in.npz", help="inputs named in0, in1, ... or in the "
                   "method's input order; arrays out0, out1, ... are compared with the outputs")
    p.add_argument("--cast", action="store_true", help="convert inputs whose dtype differs "
                   "(float to float, int to int); without it a differing dtype is an error")
    p.add_argument("--data", action="append", default=[], metavar="F.ptd")
    p.add_argument("--output", metavar="out.npz", help="write outputs out0, out1, ...")
    p.add_argument("--repeat", type=_count, default=1, help="execute N times (timing)")
    p.add_argument("--backend", choices=("browser", "native"), default="browser")
    p.add_argument("--profile", action="store_true", help="print per-op GPU times")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("bench", parents=[common],
                       help="benchmark rms_norm (or linear) variants against copy, "
                       "ORT Web, torch")
    p.add_argument("--llm", metavar="MODEL.pte", help="instead: prefill and decode tok/s of a "
                   "language model (.pte or a `bench/llm_bench.py zero` .pte.gz) by context, "
                   "against ORT Web and transformers.js (browser) or torch CUDA (native)")
    p.add_argument("--vision", metavar="MODEL.pte", help="instead: latency of an image model "
                   "at batch 1 against torch CUDA eager and compiled (native) or ONNX Runtime "
                   "Web (browser), outputs compared with NAME.npz's (bench/vision_bench.py)")
    p.add_argument("--runs", type=_count, help="--vision: timed samples (default 50)")
    p.add_argument("--warmup", type=_tokens, help="--vision: untimed runs first (default 10)")
    p.add_argument("--inputs", metavar="in.npz", help="--vision: the image as in0 (its out0 "
                   "the reference; default NAME.npz beside the model, else a seeded image)")
    p.add_argument("--onnx", metavar="F.onnx", help="--vision browser: the model as ONNX for "
                   "ORT Web (default NAME.onnx beside the model)")
    p.add_argument("--torch-model", metavar="NAME[:ci|full]", help="--vision native: the torch "
                   "module (bench/vision_models.py; default NAME.json's model and size)")
    p.add_argument("--contexts", default="16,256,1024", metavar="C,...",
                   help="--llm: context lengths (default 16,256,1024)")
    p.add_argument("--steps", type=_count, default=8, help="--llm: decode steps per context")
    p.add_argument("--export-json", metavar="E.json", help="--llm: convert's OUT.export.json "
                   "(torch's hyper-parameters; default: the one beside the model)")
    p.add_argument("--onnx-dir", metavar="DIR", help="--llm: the model as ONNX (make llm-onnx; "
                   "default build/llm-onnx/NAME)")
    p.add_argument("--no-torch", action="store_true", help="--llm native: skip torch CUDA")
    p.add_argument("--no-warmup", action="store_true", help="--llm: no untimed prefill of "
                   "each length before its timed one")
    p.add_argument("--profile", action="store_true", help="--llm: per-op GPU times of one "
                   "more decode step per context, and each prefill's (record's cost)")
    p.add_argument("--peer-prefill-max", type=_tokens, metavar="TOKENS", help="--llm browser: "
                   "the longest prompt ORT Web and transformers.js prefill for real (default "
                   "256; 0: none); at a context with a longer prefill their decode starts from "
                   "a zero-filled KV cache of that length on the GPU, at our decode positions, "
                   "and gives no prefill record (records say cache: seeded)")
    p.add_argument("--op", choices=("rms_norm", "linear", "conv"), default="rms_norm",
                   help="the op to measure (linear: bench/matmul_bench.py; conv: "
                   "bench/conv_bench.py, native)")
    p.add_argument("--backend", choices=("browser", "native"), default="browser")
    p.add_argument("--shapes", metavar="RxW,...", help="rms_norm: ROWSxWIDTH, e.g. "
                   "512x4096,4096x64 (default: six); linear: MxKxN, e.g. 1x4096x4096; conv: "
                   "CinxHxW-CoutkKsSpP[gG], e.g. 64x56x56-64k3s1p1")
    p.add_argument("--dtypes", metavar="D,...", help="linear: float32,float16 (default both), "
                   "q4,q4f16 (4-bit weights)")
    p.add_argument("--output", metavar="FILE.json", help="write the records as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="plot (default: beside --output, else build/bench/)")
    p.add_argument("--markdown", metavar="FILE.md", help="also write the tables here")
    p.add_argument("--variants", metavar="V,...", help="variants to measure "
                   "(default: the candidates for the adapter)")
    p.add_argument("--no-ort", action="store_true", help="browser: skip ONNX Runtime Web "
                   "(--llm: and transformers.js)")
    p.add_argument("--roundtrip", action="store_true", help="instead: execute() round trip from "
                   "Python vs the same work from plain JS (bench/roundtrip.py)")
    p.set_defaults(func=cmd_bench)
    p = sub.add_parser("serve", parents=[common], help="serve the demo page and console on 127.0.0.1")
    p.add_argument("--port", type=_port, default=8000, help="0 picks a free port")
    p.set_defaults(func=cmd_serve)
    from .convert_cli import add_parser as add_convert
    from .generate_cli import add_parser as add_generate

    add_generate(sub)
    add_convert(sub, common, _count)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return code
    except PteError as e:
        print(f"pte-webgpu: error: {error_text(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # the reader left early (`inspect --json | head`): not an error to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
