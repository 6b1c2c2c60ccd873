"""Decode and prefill speed of an exported language model: ours (native wgpu) against
torch on CUDA (transformers' Llama with the same shapes), measured in one run.

    pte-webgpu bench --llm MODEL.pte[.gz] [--backend native|browser] [--contexts 16,256,1024]
        [--steps 8] [--export-json E.json] [--output F.json] [--plot F.png] [--markdown F.md]
        records per context (``main_llm``): ours (llm/bench_job.py) on the backend; natively
        torch on CUDA where present; in the browser ONNX Runtime Web and transformers.js on
        the same model as ONNX (``make llm-onnx``; bench/llm_browser.py)

    python bench/llm_bench.py zero MODEL.pte OUT.pte.gz   (OUT: MODEL's name + .gz)
        a copy whose named-data weights are zeros: the same graph and sizes (timing does
        not depend on the values), gzipped to a few MB, so it can travel to a GPU machine
    python bench/llm_bench.py run MODEL.pte[.gz] --export-json E.json [--prompt-len 32]
        [--steps 32] [--output F.json] [--markdown F.md] [--no-torch] [--unfused]

``run``: ours loads the program, runs a prefill of ``prompt-len`` tokens (one execute),
then ``steps`` decode executes of one token each (outputs read back every step, as
generation needs them); torch (when CUDA is present) builds ``LlamaForCausalLM`` from
the export's hyper-parameters (make llm's E.json) in the program's dtype, random
weights, and times the same prefill and decode steps with its KV cache, each step ending
in ``argmax().item()``. Records: {"impl", "dtype", "prefill_ms", "decode_ms" (median per
token), "tok_s"}; the ratio torch/ours per dtype is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

from pte_webgpu.llm.bench_job import prompt_ids

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:  # the report and browser parts beside this file
    sys.path.append(str(HERE))


def zero_weights(src: Path, dst: Path) -> None:
    from pte_webgpu.formats.pte import read_program

    data = bytearray(src.read_bytes())
    program = read_program(memoryview(data))
    keep = {d.index for p in program.plans for d in p.delegates if d.location == "segment"}
    zeroed = 0
    for index, seg in enumerate(program.segments):
        if index not in keep:
            data[seg.file_offset:seg.file_offset + seg.size] = bytes(seg.size)
            zeroed += seg.size
    with gzip.open(dst, "wb", compresslevel=6) as f:
        f.write(data)
    print(f"{dst}: {zeroed / 1e6:.1f} MB of {len(data) / 1e6:.1f} MB zeroed, "
          f"{dst.stat().st_size / 1e6:.1f} MB gzipped")


def _read(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


async def ours(pte: bytes, prompt_len: int, steps: int, dtype: str, fuse: bool = True) -> dict:
    import array

    import pte_webgpu
    from pte_webgpu.model.tensor import Tensor

    def ids(values):
        return Tensor(array.array("q", values), (1, len(values)), "int64")

    def pos(p):
        return Tensor(array.array("q", [p]), (1,), "int64")

    rt = await pte_webgpu.Runtime.create("native", options={"fuse": fuse})
    try:
        program = await rt.load_program(pte)
        method = program.load_method("forward")
        prompt = prompt_ids(prompt_len)
        await method.execute([ids(prompt), pos(0)])  # warm-up: pipelines, first-use costs
        await method.execute([ids([5]), pos(prompt_len)])
        method.reset()
        t0 = time.perf_counter()
        await method.execute([ids(prompt), pos(0)], as_numpy=False)
        prefill = (time.perf_counter() - t0) * 1e3
        times = []
        for k in range(steps):
            t0 = time.perf_counter()
            await method.execute([ids([5 + k]), pos(prompt_len + k)], as_numpy=False)
            times.append((time.perf_counter() - t0) * 1e3)
        # greedy as LanguageModel runs it: the token picked on the GPU (4 bytes back), and
        # chained (the next step submitted before this one's token is read, fed on the GPU)
        argmax = []
        for k in range(steps):
            t0 = time.perf_counter()
            await method.execute([ids([5 + k]), pos(prompt_len + k)], argmax=True)
            argmax.append((time.perf_counter() - t0) * 1e3)
        from pte_webgpu.runtime.method import gpu_work
        from pte_webgpu.runtime.readout import LastArgmax
        t0 = time.perf_counter()
        pending = [await method.execute([ids([5]), pos(prompt_len)], argmax=True, wait=False)]
        for k in range(1, steps):
            pending.append(await method.execute([LastArgmax(), pos(prompt_len + k)],
                                                argmax=True, wait=False))
            await pending[-2]
        await pending[-1]
        chained = (time.perf_counter() - t0) * 1e3 / steps
        # one more step with timestamps: the GPU's busy time of a decode step (the rest of
        # the step's wall time is the host: encoding, host steps, submit, readback)
        await method.execute([ids([5]), pos(prompt_len + steps)], as_numpy=False, profile=True)
        gpu = sum(row["us"] for row in method.last_profile) / 1e3
        # dispatches the step ran (an unused twin's grid is empty)
        ran = sum(1 for s in gpu_work(method).recording.steps
                  if getattr(s, "grid", (0,))[0])
        return {"impl": "ours" if fuse else "ours-unfused", "adapter": rt.device.info.summary(),
                "dtype": dtype, "prefill_ms": prefill, "decode_ms": statistics.median(times),
                "tok_s": 1e3 / statistics.median(times), "decode_gpu_ms": gpu,
                "decode_argmax_ms": statistics.median(argmax), "decode_chained_ms": chained,
                "chained_tok_s": 1e3 / chained, "dispatches": ran}
    finally:
        rt.close()


def torch_model(hp: dict, dtype: str):
    """transformers' LlamaForCausalLM with the export's hyper-parameters on CUDA in
    ``dtype`` (random weights: timing does not depend on them), or None without CUDA."""
    try:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    cfg = LlamaConfig(vocab_size=hp["vocab_size"], hidden_size=hp["dim"],
                      intermediate_size=hp["hidden_dim"], num_hidden_layers=hp["n_layers"],
                      num_attention_heads=hp["n_heads"], num_key_value_heads=hp["n_kv_heads"],
                      head_dim=hp["head_dim"], rope_theta=hp["rope_freq_base"],
                      rms_norm_eps=hp["norm_eps"], tie_word_embeddings=hp.get("tied_output", True),
                      max_position_embeddings=4096)
    torch.backends.cuda.matmul.allow_tf32 = False
    return LlamaForCausalLM(cfg).to("cuda", getattr(torch, dtype)).eval()


def torch_prefill_decode(model, prompt_len: int, steps: int):
    """One prefill of ``prompt_len`` ids (ms), then ``steps`` greedy decode steps with the
    KV cache (ms each), each ending in ``argmax().item()`` as a generation loop does; and
    the greedy tokens."""
    import torch

    prompt = torch.tensor([prompt_ids(prompt_len, model.config.vocab_size)], device="cuda")
    with torch.no_grad():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model(prompt, use_cache=True)
        token = out.logits[0, -1].argmax().item()
        prefill = (time.perf_counter() - t0) * 1e3
        past, times, greedy = out.past_key_values, [], [token]
        for _ in range(steps):
            t0 = time.perf_counter()
            out = model(torch.tensor([[token]], device="cuda"), past_key_values=past,
                        use_cache=True)
            token = out.logits[0, -1].argmax().item()
            past = out.past_key_values
            times.append((time.perf_counter() - t0) * 1e3)
            greedy.append(token)
    return prefill, times, greedy


def torch_cuda(hp: dict, dtype: str, prompt_len: int, steps: int) -> dict | None:
    import torch

    model = torch_model(hp, dtype)
    if model is None:
        return None
    torch_prefill_decode(model, prompt_len, steps)  # warm-up
    prefill, times, _ = torch_prefill_decode(model, prompt_len, steps)
    decode = statistics.median(times)
    return {"impl": "torch-cuda", "adapter": torch.cuda.get_device_name(), "dtype": dtype,
            "prefill_ms": prefill, "decode_ms": decode, "tok_s": 1e3 / decode}


def torch_records(hp: dict, dtype: str, todo: list[dict], warmup: bool = True) -> list[dict]:
    """``bench --llm`` records of torch on CUDA for the plan ``todo`` (llm/bench_job.plan):
    the same prefill lengths and decode positions as ours; [] without torch + CUDA."""
    from pte_webgpu.llm.bench_job import WARMUP_TOKENS, summarize

    model = torch_model(hp, dtype)
    if model is None:
        return []
    import torch

    torch_prefill_decode(model, min(WARMUP_TOKENS, todo[0]["prefill"]), 1)
    records = []
    for p in todo:
        if warmup:
            torch_prefill_decode(model, p["prefill"], 1)
        prefill, times, greedy = torch_prefill_decode(model, p["prefill"], p["steps"])
        records.append({"phase": "prefill", "context": p["context"], "tokens": p["prefill"],
                        "ms": [prefill]})
        records.append({"phase": "decode", "context": p["context"], "greedy": greedy,
                        "positions": [p["prefill"], p["prefill"] + p["steps"] - 1], "ms": times,
                        "cache": "prefill"})
    version = f"torch {torch.__version__}"
    return [dict(summarize(r), impl="torch-cuda", adapter=torch.cuda.get_device_name(),
                 version=version) for r in records]


def table(records: list[dict], prompt_len: int) -> str:
    lines = [f"| impl | dtype | prefill {prompt_len} tokens ms | decode ms/token | tok/s | "
             "argmax ms/token | chained ms/token | decode GPU busy ms (dispatches) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in records:
        gpu = (f"{r['decode_gpu_ms']:.2f} ({r['dispatches']})" if "decode_gpu_ms" in r
               else "-")
        more = " | ".join(f"{r[k]:.2f}" if k in r else "-"
                          for k in ("decode_argmax_ms", "decode_chained_ms"))
        lines.append(f"| {r['impl']} | {r['dtype']} | {r['prefill_ms']:.1f} | "
                     f"{r['decode_ms']:.2f} | {r['tok_s']:.1f} | {more} | {gpu} |")
    by = {(r["impl"], r["dtype"]): r for r in records}
    for (impl, dtype), r in by.items():
        t = by.get(("torch-cuda", dtype))
        if impl == "ours" and t:
            lines.append(f"\n{dtype}: decode ours/torch speed {t['decode_ms'] / r['decode_ms']:.2f}x "
                         f"(chained {t['decode_ms'] / r.get('decode_chained_ms', r['decode_ms']):.2f}x), "
                         f"prefill {t['prefill_ms'] / r['prefill_ms']:.2f}x")
    return "\n".join(lines)


def program_dtype(name: str, export: dict | None) -> str:
    """The weights' dtype, by the export's name for the file (fp16 programs keep f32
    logits); without an export record, by the name."""
    for key, entry in (export or {}).get("programs", {}).items():
        if entry.get("file") == name:
            return {"fp16": "float16"}.get(key, "float32")
    return "float16" if "fp16" in name else "float32"


def find_export(model: Path, given: Path | None) -> dict | None:
    """The model's export record (convert's OUT.export.json): --export-json, else the one
    beside the model that lists it (None when there is none: torch then has no
    hyper-parameters)."""
    name = model.name.removesuffix(".gz")
    candidates = [given] if given else sorted(model.parent.glob("*.export.json"))
    for path in candidates:
        try:
            export = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            if given:
                raise ValueError(f"--export-json {given}: {e}") from None
            continue
        if given or any(p.get("file") == name for p in export.get("programs", {}).values()):
            return export
    return None


def main_llm(model: Path, backend: str, todo: list[dict], *, export: dict | None,
             output=None, plot_path=None, markdown_path=None, torch: bool = True,
             web: bool = True, onnx_dir: Path | None = None, warmup: bool = True,
             profile: bool = False, peer_prefill_max: int | None = None,
             progress=print) -> int:
    """``pte-webgpu bench --llm``: ``todo`` is llm/bench_job.plan's list (checked by the
    CLI on the host)."""
    import llm_report

    pte = _read(model)
    dtype = program_dtype(model.name.removesuffix(".gz"), export)
    contexts = [p["context"] for p in todo]
    steps = todo[0]["steps"]
    if backend == "native":
        from pte_webgpu.app.run_job import run_coroutine
        from pte_webgpu.llm.bench_job import llm_bench_job

        result = run_coroutine(llm_bench_job(pte, (), contexts=contexts, steps=steps,
                                             warmup=warmup, profile=profile, backend="native",
                                             progress=progress))
        web_records = []
    else:
        import llm_browser

        if peer_prefill_max is None:
            peer_prefill_max = llm_browser.PEER_PREFILL_MAX
        result, web_records = llm_browser.run(model, todo, web=web, onnx_dir=onnx_dir,
                                              warmup=warmup, profile=profile,
                                              peer_prefill_max=peer_prefill_max,
                                              progress=progress)
    base = {"backend": backend, "adapter": result["adapter"]}
    records = [dict(r, impl="ours", dtype=dtype, file=model.name, load_s=result["load_s"], **base)
               for r in result["records"]]
    for r in records:  # ours always decodes after its own prefill
        if r["phase"] == "decode":
            r["cache"] = "prefill"
    records += [dict(r, dtype="float32", **base) for r in web_records]
    if backend == "native" and torch and export:
        progress("torch on CUDA (when present)")
        records += [dict(r, backend=backend, dtype=dtype)
                    for r in torch_records(export["hparams"], dtype, todo, warmup)]
        progress("torch static-cache step as CUDA graphs, compiled and not (when present)")
        import llm_torch_static

        records += [dict(r, backend=backend, dtype=dtype)
                    for r in llm_torch_static.records(export["hparams"], dtype, todo, progress)]
    text = llm_report.markdown(records, result.get("profiles", {}), result.get("timestamps", True),
                               result.get("web_profiles"))
    print(text)
    if output:
        Path(output).write_text(json.dumps(records, indent=1) + "\n")
        progress(f"wrote {output}")
        if result.get("profiles"):
            prof = Path(output).with_suffix(".profile.json")
            prof.write_text(json.dumps({"ours": result["profiles"],
                                        **{k: v for k, v in result.get("web_profiles", {}).items()}},
                                       indent=1) + "\n")
            progress(f"wrote {prof}")
    plot_path = plot_path or (Path(output).with_suffix(".png") if output else
                              REPO / "build" / "bench" / f"llm-{backend}.png")
    Path(plot_path).parent.mkdir(parents=True, exist_ok=True)
    if llm_report.plot(records, str(plot_path)):
        progress(f"wrote {plot_path}")
    if markdown_path:
        Path(markdown_path).write_text(text + "\n")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    z = sub.add_parser("zero")
    z.add_argument("pte", type=Path)
    z.add_argument("out", type=Path)
    r = sub.add_parser("run")
    r.add_argument("pte", type=Path, nargs="+")
    r.add_argument("--export-json", type=Path, required=True)
    r.add_argument("--prompt-len", type=int, default=32)
    r.add_argument("--steps", type=int, default=32)
    r.add_argument("--output", type=Path)
    r.add_argument("--markdown", type=Path)
    r.add_argument("--no-torch", action="store_true")
    r.add_argument("--unfused", action="store_true",
                   help="also run ours with load-time fusion off (option fuse=False)")
    args = parser.parse_args(argv)
    if args.cmd == "zero":
        zero_weights(args.pte, args.out)
        return 0
    export = json.loads(args.export_json.read_text())
    hp = export["hparams"]
    # the weights' dtype, by the export's name for the file (fp16 programs keep f32 logits)
    dtypes = {v["file"]: {"fp16": "float16"}.get(k, "float32")
              for k, v in export.get("programs", {}).items()}
    records = []
    for path in args.pte:
        name = path.name.removesuffix(".gz")
        rec = asyncio.run(ours(_read(path), args.prompt_len, args.steps,
                               dtypes.get(name, "float32")))
        rec["file"] = path.name
        records.append(rec)
        print(f"ours {path.name}: {rec}", file=sys.stderr, flush=True)
        if args.unfused:
            rec = asyncio.run(ours(_read(path), args.prompt_len, args.steps, rec["dtype"],
                                   fuse=False))
            rec["file"] = path.name
            records.append(rec)
            print(f"ours unfused {path.name}: {rec}", file=sys.stderr, flush=True)
        if not args.no_torch:
            t = torch_cuda(hp, rec["dtype"], args.prompt_len, args.steps)
            if t:
                records.append(t)
                print(f"torch: {t}", file=sys.stderr, flush=True)
    text = table(records, args.prompt_len)
    print(text)
    if args.output:
        args.output.write_text(json.dumps(records, indent=1))
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
