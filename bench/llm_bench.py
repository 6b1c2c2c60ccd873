"""Decode and prefill speed of an exported language model: ours (native wgpu) against
torch on CUDA (transformers' Llama with the same shapes), measured in one run.

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

REPO = Path(__file__).resolve().parent.parent


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
    import pte_webgpu
    from pte_webgpu.tensor import Tensor
    import array

    def ids(values):
        return Tensor(array.array("q", values), (1, len(values)), "int64")

    def pos(p):
        return Tensor(array.array("q", [p]), (1,), "int64")

    rt = await pte_webgpu.Runtime.create("native", options={"fuse": fuse})
    try:
        program = await rt.load_program(pte)
        method = program.load_method("forward")
        prompt = [(7 * i + 3) % 1000 + 1 for i in range(prompt_len)]
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
        ran = sum(1 for s in method._gpu_parts()["recording"].steps
                  if getattr(s, "grid", (0,))[0])
        return {"impl": "ours" if fuse else "ours-unfused", "adapter": rt.device.info.summary(),
                "dtype": dtype, "prefill_ms": prefill, "decode_ms": statistics.median(times),
                "tok_s": 1e3 / statistics.median(times), "decode_gpu_ms": gpu,
                "decode_argmax_ms": statistics.median(argmax), "decode_chained_ms": chained,
                "chained_tok_s": 1e3 / chained, "dispatches": ran}
    finally:
        rt.close()


def torch_cuda(hp: dict, dtype: str, prompt_len: int, steps: int) -> dict | None:
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
    model = LlamaForCausalLM(cfg).to("cuda", getattr(torch, dtype)).eval()
    prompt = torch.tensor([[(7 * i + 3) % 1000 + 1 for i in range(prompt_len)]], device="cuda")

    def run():
        with torch.no_grad():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model(prompt, use_cache=True)
            out.logits[0, -1].argmax().item()
            prefill = (time.perf_counter() - t0) * 1e3
            past, times = out.past_key_values, []
            for k in range(steps):
                t0 = time.perf_counter()
                out = model(torch.tensor([[5 + k]], device="cuda"), past_key_values=past,
                            use_cache=True)
                out.logits[0, -1].argmax().item()
                past = out.past_key_values
                times.append((time.perf_counter() - t0) * 1e3)
        return prefill, statistics.median(times)
    run()  # warm-up
    prefill, decode = run()
    return {"impl": "torch-cuda", "adapter": torch.cuda.get_device_name(), "dtype": dtype,
            "prefill_ms": prefill, "decode_ms": decode, "tok_s": 1e3 / decode}


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
