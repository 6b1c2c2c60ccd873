"""A Llama GGUF -> ONNX as ONNX Runtime's own LLM exporter builds it (onnxruntime-genai's
``onnxruntime_genai.models.builder``, target ``webgpu``), for ``bench --llm``'s browser peer
"ort-web-genai" (``make llm-onnx-genai``). Host only (the extra ``[onnx-genai]``).

    python -m pte_webgpu.export.llm_onnx_genai MODEL.gguf --out-dir build/llm-onnx-genai \
        [--precision int4 fp32] [--graph-capture]
    python -m pte_webgpu.export.llm_onnx_genai --tiny tests/fixtures/llm_onnx_genai

The weights: transformers' LlamaForCausalLM loaded from the GGUF (``llm_reference.hf_model``:
the file's Q4_1 / Q8_0 blocks dequantized to fp32, q/k in HF's rotate-half layout), written
with ``save_pretrained`` and the GGUF's tokenizer (transformers' conversion) into
``OUT/hf``, then one builder run per precision into ``OUT/<precision>/`` (``model.onnx``,
``model.onnx.data``, ``genai_config.json``, tokenizer files). The graph: GroupQueryAttention
(rotary inside it), MatMulNBits (int4: the builder's own RTN quantization of the dequantized
weights, blocks of 32) or MatMul (fp32), SkipSimplifiedLayerNormalization; fp32 I/O in both
(``use_webgpu_fp32``: the SwiftShader adapter has no ``shader-f16``). ``--graph-capture``
builds for the WebGPU EP's graph capture (``enable_webgpu_graph``; ORT Web 1.30.0 fails its
second run, docs/performance.md).

Each folder gets ``export.json``: op counts of the graph, the genai_config's I/O names, and a
check: ONNX Runtime (Python, CPU) greedy tokens and step-0 logits for the bench's check prompt
against the HF model in torch (fp32: equal tokens; int4: top-1 agreement, since the builder's
int4 weights are not the float ones).

``--tiny``: a random 2-layer Llama (small width, vocab 96) through the same builder, for the
browser test (tests/browser/test_bench_llm_web_genai.py): the ONNX files, ``config.json`` and
``reference.json`` (torch's greedy tokens and ORT CPU's step-0 logits for a 5-token prompt).
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

# the prompt of llm_onnx's check (and bench/llm_web.js promptIds for n = 12, vocab > 1000)
SCALE = 1.0  # weights x SCALE after init
CHECK_PROMPT = [(7 * i + 3) % 1000 + 1 for i in range(12)]


def hf_folder(gguf: Path, out: Path) -> Path:
    """The GGUF as a transformers folder (config, safetensors, tokenizer) at ``out``."""
    from transformers import AutoTokenizer

    from .llm_reference import hf_model

    model = hf_model(gguf)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(out)
    return out


def tiny_folder(out: Path, seed: int = 0) -> Path:
    """A random 2-layer Llama (GQA 4 heads over 2 kv heads, head_dim 16, vocab 96, untied head:
    a tied one keeps picking the last token)
    and a word-level tokenizer of its vocabulary, saved at ``out``."""
    import torch
    from tokenizers import Tokenizer, models
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                         max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
                         tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # a peakier distribution than init's: greedy picks well apart
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(SCALE)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    vocab = {f"t{i}": i for i in range(config.vocab_size)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="t0"))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="t1", eos_token="t2",
                                   unk_token="t0")
    fast.save_pretrained(out)
    return out


def build(hf: Path, out: Path, precision: str, graph_capture: bool = False) -> Path:
    """One onnxruntime-genai builder run (``-e webgpu``, fp32 I/O) into ``out``."""
    cache = out.parent / f".cache-{out.name}"
    extra = ["use_webgpu_fp32=true", "int4_block_size=32"]
    if graph_capture:
        extra.append("enable_webgpu_graph=true")
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(hf), "-o", str(out),
           "-p", precision, "-e", "webgpu", "-c", str(cache), "--extra_options", *extra]
    subprocess.run(cmd, check=True)
    shutil.rmtree(cache, ignore_errors=True)
    return out


def graph_ops(path: Path) -> dict:
    """{op_type: count} of the graph (its nodes only, external data not loaded)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return dict(collections.Counter(n.op_type for n in model.graph.node).most_common())


def io_spec(folder: Path) -> dict:
    """What bench/llm_web.js needs from the builder's genai_config.json."""
    cfg = json.loads((folder / "genai_config.json").read_text())
    dec = cfg["model"]["decoder"]
    return {"filename": dec["filename"], "inputs": dec["inputs"], "outputs": dec["outputs"],
            "nLayers": dec["num_hidden_layers"], "kvHeads": dec["num_key_value_heads"],
            "headDim": dec["head_size"], "vocab": cfg["model"]["vocab_size"],
            "shareBuffer": cfg["search"].get("past_present_share_buffer", False),
            "maxLength": cfg["search"].get("max_length"),
            "providerOptions": dec.get("session_options", {}).get("provider_options", [])}


def ort_greedy(folder: Path, ids: list[int], steps: int):
    """Greedy tokens and each run's last logits row of ONNX Runtime (Python, CPU) on the
    builder's graph: prefill, then one token per run, the cache growing (no shared buffer)."""
    import numpy as np
    import onnxruntime as ort

    spec = io_spec(folder)
    session = ort.InferenceSession(str(folder / spec["filename"]), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    past_key, past_value = spec["inputs"]["past_key_names"], spec["inputs"]["past_value_names"]
    present_key, present_value = spec["outputs"]["present_key_names"], spec["outputs"]["present_value_names"]
    layers = range(spec["nLayers"])
    empty = np.zeros((1, spec["kvHeads"], 0, spec["headDim"]), np.float32)
    past = {n % i: empty for i in layers for n in (past_key, past_value)}
    tokens, rows, feed, start = [], [], list(ids), 0
    outs = ["logits", *[n % i for i in layers for n in (present_key, present_value)]]
    for _ in range(steps):
        n = len(feed)
        feeds = {"input_ids": np.array([feed], np.int64),
                 "attention_mask": np.ones((1, start + n), np.int64), **past}
        if "position_ids" in names:
            feeds["position_ids"] = np.arange(start, start + n, dtype=np.int64)[None]
        got = dict(zip(outs, session.run(outs, feeds)))
        logits = got["logits"][0, -1]
        rows.append(logits.copy())
        past = {n % i: got[m % i] for i in layers
                for n, m in ((past_key, present_key), (past_value, present_value))}
        start += n
        tokens.append(int(logits.argmax()))
        feed = tokens[-1:]
    return tokens, rows


def torch_greedy(hf: Path, ids: list[int], steps: int):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32).eval()
    with torch.no_grad():
        step0 = model(torch.tensor([ids])).logits[0, -1].numpy().copy()
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             max_new_tokens=steps, min_new_tokens=steps, do_sample=False)
    return [int(t) for t in out[0, len(ids):]], step0


def check(folder: Path, hf: Path, precision: str, ids: list[int], steps: int) -> dict:
    import numpy as np

    want, want0 = torch_greedy(hf, ids, steps)
    got, rows = ort_greedy(folder, ids, steps)
    got0 = rows[0]
    same = sum(a == b for a, b in zip(got, want))
    report = {"prompt": ids, "torch_tokens": want, "ort_cpu_tokens": got,
              "token_agreement": f"{same}/{len(want)}",
              "step0_argmax_equal": int(want0.argmax()) == int(got0.argmax()),
              "step0_max_abs_diff": float(np.abs(got0 - want0).max())}
    # fp32: the same model, to float rounding; int4: the builder's own quantization
    report["holds"] = (got == want if precision == "fp32" else report["step0_argmax_equal"])
    return report, rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pte_webgpu.export.llm_onnx_genai")
    ap.add_argument("gguf", type=Path, nargs="?")
    ap.add_argument("--out-dir", type=Path)
    ap.add_argument("--precision", nargs="+", default=["int4", "fp32"], choices=["int4", "fp32", "fp16"])
    ap.add_argument("--graph-capture", action="store_true",
                    help="the builder's enable_webgpu_graph (no Shape ops on the CPU)")
    ap.add_argument("--check-tokens", type=int, default=8)
    ap.add_argument("--tiny", type=Path, help="write the tiny test fixture to this folder instead")
    args = ap.parse_args(argv)
    if args.tiny:
        return tiny(args.tiny)
    if not args.gguf or not args.out_dir:
        ap.error("GGUF and --out-dir, or --tiny DIR")
    start = time.monotonic()
    hf = args.out_dir / "hf"
    if not (hf / "model.safetensors").is_file():
        hf_folder(args.gguf, hf)
    ok = True
    for precision in args.precision:
        folder = build(hf, args.out_dir / precision, precision, args.graph_capture)
        spec = io_spec(folder)
        report = {"gguf": args.gguf.name, "precision": precision, "graph_capture": args.graph_capture,
                  "ops": graph_ops(folder / spec["filename"]), "io": spec,
                  "bytes": sum(p.stat().st_size for p in folder.glob(spec["filename"] + "*"))}
        report["check"], _ = check(folder, hf, precision, CHECK_PROMPT, args.check_tokens)
        report["seconds"] = round(time.monotonic() - start, 1)
        (folder / "export.json").write_text(json.dumps(report, indent=1))
        print(json.dumps({k: report[k] for k in ("precision", "ops", "bytes", "check")}), file=sys.stderr)
        ok = ok and report["check"]["holds"]
    return 0 if ok else 1


def tiny(out: Path) -> int:
    """The browser test's fixture: int4 and fp32 graphs of a tiny random Llama, and references."""
    import tempfile

    prompt, steps = [4, 11, 18, 25, 32], 4
    with tempfile.TemporaryDirectory() as tmp:
        hf = tiny_folder(Path(tmp) / "hf")
        config = json.loads((hf / "config.json").read_text())
        reference = {"prompt": prompt}
        for precision in ("fp32", "int4"):
            folder = build(hf, Path(tmp) / precision, precision)
            report, rows = check(folder, hf, precision, prompt, steps)
            # int4: the builder's quantization of random weights need not keep torch's picks;
            # the browser test compares ORT Web with ORT CPU on the same graph there
            if precision == "fp32" and not report["holds"]:
                print(json.dumps(report), file=sys.stderr)
                return 1
            dest = out / precision
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            for name in ("genai_config.json", "model.onnx", "model.onnx.data"):
                if (folder / name).is_file():
                    shutil.copy(folder / name, dest / name)
            reference[precision] = {**{k: report[k] for k in (
                "torch_tokens", "ort_cpu_tokens", "token_agreement", "step0_max_abs_diff")},
                                    "logits": [[round(float(x), 5) for x in r] for r in rows],
                                    "ops": graph_ops(folder / "model.onnx")}
        keep = {k: config[k] for k in ("vocab_size", "num_hidden_layers", "num_key_value_heads",
                                       "head_dim", "hidden_size")}
        (out / "config.json").write_text(json.dumps(keep, indent=1))
        (out / "reference.json").write_text(json.dumps(reference, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
