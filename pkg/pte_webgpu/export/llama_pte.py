"""Build ExecuTorch's llama example model from GGUF weights and lower it for Vulkan.

The lowering follows ExecuTorch's own ``export_llama --vulkan`` path step by step
(LLMEdgeManager, the llama source transforms with ``sdpa_with_kv_cache`` so the KV cache
lives inside the delegate, dynamic-shape prefill, the Vulkan partitioner).
"""

from __future__ import annotations

from . import gguf_arch
from .gguf_llama import LlamaHParams

# Quantization presets: keyword arguments of the llama export's _get_source_transforms.
# "q4": linears as 4-bit groups of 32 (torchao IntxWeightOnlyConfig -> et_vk.linear_q4gsw) and
# the embedding as 4-bit groups of 32 (-E 4,32 -> et_vk.embedding_q4gsw), both symmetric, so the
# program stays one Vulkan delegate (-E 8,0 would leave the embedding outside it).
QUANTIZE = {
    None: {},
    "q4": {"quantization_mode": "4w", "group_size": 32, "embedding_quantize": "4,32"},
}


def _transforms(quantize):
    from executorch.examples.models.llama import export_llama_lib
    from executorch.extension.llm.export.builder import DType

    if quantize not in QUANTIZE:
        raise ValueError(f"unknown quantization {quantize!r} (known: {[k for k in QUANTIZE if k]})")
    return export_llama_lib._get_source_transforms(
        DType.fp32, use_sdpa_with_kv_cache=True, use_kv_cache=True, vulkan=True, **QUANTIZE[quantize]
    )


def model_args(hp: LlamaHParams, max_seq_len: int, max_context_len: int):
    from executorch.examples.models.llama.model_args import ModelArgs

    return ModelArgs(
        dim=hp.dim,
        n_layers=hp.n_layers,
        n_heads=hp.n_heads,
        n_kv_heads=hp.n_kv_heads,
        head_dim=hp.head_dim,
        vocab_size=hp.vocab_size,
        hidden_dim=hp.hidden_dim,
        rope_freq_base=hp.rope_freq_base,
        norm_eps=hp.norm_eps,
        attention_qkv_bias=hp.qkv_bias,
        use_qk_norm=hp.qk_norm,
        qk_norm_before_rope=True,  # Qwen 3 normalizes each q/k head before RoPE
        max_batch_size=1,
        max_seq_len=max_seq_len,
        max_context_len=max_context_len,
        use_kv_cache=True,
        use_sdpa_with_kv_cache_op=True,
        enable_dynamic_shape=True,
    )


def build_model(hp: LlamaHParams, weights: dict, max_seq_len: int, max_context_len: int):
    """The eager llama example model (fp32, eval) holding the GGUF weights."""
    import torch
    from executorch.examples.models.llama.llama_transformer import construct_transformer

    gguf_arch.check_sliding_window(hp, max_context_len)
    # Built on CPU (not meta + to_empty): RoPE tables, masks and caches must be real values.
    args = model_args(hp, max_seq_len, max_context_len)
    with torch.no_grad():
        if hp.gemma:
            from . import gemma_model

            model = gemma_model.construct(hp, args)
        else:
            model = construct_transformer(args)
        missing, unexpected = model.load_state_dict(weights, strict=False)
    # Only the KV caches (zero-initialised buffers) may be absent from the GGUF.
    missing = [k for k in missing if not k.endswith(("k_cache", "v_cache"))]
    if missing or unexpected:
        raise ValueError(f"GGUF weights do not fit the model: missing {missing}, unexpected {unexpected}")
    factors, scale = gguf_arch.longrope(hp, max_context_len)
    factors = factors or hp.rope_freq_factors
    if factors is not None or scale != 1.0:
        cos, sin = rope_tables(hp, max_context_len, factors, scale)
        with torch.no_grad():
            model.rope.freqs_cos.copy_(cos)
            model.rope.freqs_sin.copy_(sin)
    return model.eval()


def rope_tables(hp: LlamaHParams, positions: int, factors=None, scale: float = 1.0):
    """cos/sin tables [positions, head_dim / 2] of interleaved-pair RoPE with each frequency
    divided by its factor (``factors``: Llama 3.1+'s rope_freqs or Phi-3's LongRoPE set, as
    llama.cpp applies both; none: unscaled) and both tables times ``scale`` (LongRoPE's
    attention factor), computed in float64 and rounded once to float32."""
    import torch

    half = hp.head_dim // 2
    inv = hp.rope_freq_base ** (-torch.arange(half, dtype=torch.float64) * 2 / hp.head_dim)
    if factors is not None:
        inv = inv / torch.tensor(factors, dtype=torch.float64)
    angles = torch.outer(torch.arange(positions, dtype=torch.float64), inv)
    return (torch.cos(angles) * scale).float(), (torch.sin(angles) * scale).float()


def source_transformed(model, quantize=None, exact=None):
    """The model after the llama export's source transforms (custom SDPA + KV-cache ops, and
    the weight quantization of preset ``quantize``): the eager twin of the exported program.
    ``exact`` (export/exact_q4.groups): the GGUF's own int4 groups, put in place of the
    quantized linears they belong to; with q4, an lm head without them is 8-bit: a tied one
    shares one table with the gather (export/split_table.py), an untied one is 8-bit per
    channel (exact_q4.int8_head). Quantizing changes ``model`` in place."""
    import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401  (registers llama:: ops)
    import torch

    from . import exact_q4, split_table

    exact = exact or {}
    tied_table = None
    with torch.no_grad():
        if quantize == "q4" and "output.weight" not in exact:
            if torch.equal(model.output.weight, model.tok_embeddings.weight):
                tied_table = model.output.weight.detach().clone()
            else:
                exact_q4.int8_head(model)
        for transform in _transforms(quantize):
            model = transform(model)
    if quantize and exact:
        exact_q4.apply(model, exact)
    if tied_table is not None:  # after the transforms, which would quantize both again
        model.tok_embeddings, model.output = split_table.modules(tied_table)
    return model


def weights_digest(model) -> str:
    """sha256 over the model's weights as stored (quantized data, scales and zero points of
    torchao tensors; packed embedding buffers), KV caches left out: equal digests mean two
    processes quantized the GGUF weights alike (the reference and the export)."""
    import hashlib

    import torch

    h = hashlib.sha256()
    for name, value in sorted(model.state_dict().items()):
        if name.endswith(("k_cache", "v_cache")):
            continue
        inner = value.__tensor_flatten__()[0] if type(value) not in (torch.Tensor, torch.nn.Parameter) else []
        for part in [getattr(value, k) for k in inner] or [value]:
            h.update(name.encode())
            h.update(part.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def lower(model, hp: LlamaHParams, max_seq_len: int, max_context_len: int, variants=(False,)):
    """Yield (force_fp16, ExecuTorch program manager) for each variant of ``model``, a model
    of ``source_transformed`` (with or without quantization)."""
    import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401  (registers llama:: ops)
    import torch
    from executorch.examples.models.llama import export_llama_lib
    from executorch.extension.llm.export.builder import DType, LLMEdgeManager
    from executorch.extension.llm.export.partitioner_lib import get_vulkan_partitioner

    metadata = export_llama_lib._load_llama_model_metadata(
        use_kv_cache=True,
        use_sdpa_with_kv_cache=True,
        enable_dynamic_shape=True,
        max_seq_len=max_seq_len,
        max_context_len=max_context_len,
        n_layers=hp.n_layers,
        vocab_size=hp.vocab_size,
    )
    # forward(tokens, {"input_pos": pos}): prefill takes [1, n] tokens at [start]; decode n == 1.
    example = (torch.tensor([[2, 3, 4]], dtype=torch.long),
               {"input_pos": torch.tensor([0], dtype=torch.long)})
    manager = LLMEdgeManager(
        model=model,
        modelname="llama2",
        max_seq_len=max_seq_len,
        use_kv_cache=True,
        example_inputs=example,
        dtype=DType.fp32,
        enable_dynamic_shape=True,
        metadata=metadata,
    )
    for force_fp16 in variants:
        # Traced again per variant: to_backend moves buffers (RoPE tables) of the edge program
        # it is given into the delegate, so one edge program cannot be lowered twice.
        manager.export()
        manager.run_canonical_optimizations()
        manager.export_to_edge()
        manager.to_backend([get_vulkan_partitioner("fp32", True, force_fp16)])
        yield force_fp16, manager.to_executorch().export_program
