"""Build ExecuTorch's llama example model from GGUF weights and lower it for Vulkan.

The lowering follows ExecuTorch's own ``export_llama --vulkan`` path step by step
(LLMEdgeManager, the llama source transforms with ``sdpa_with_kv_cache`` so the KV cache
lives inside the delegate, dynamic-shape prefill, the Vulkan partitioner).
"""

from __future__ import annotations

from .gguf_llama import LlamaHParams


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

    # Built on CPU (not meta + to_empty): RoPE tables, masks and caches must be real values.
    with torch.no_grad():
        model = construct_transformer(model_args(hp, max_seq_len, max_context_len))
        missing, unexpected = model.load_state_dict(weights, strict=False)
    # Only the KV caches (zero-initialised buffers) may be absent from the GGUF.
    missing = [k for k in missing if not k.endswith(("k_cache", "v_cache"))]
    if missing or unexpected:
        raise ValueError(f"GGUF weights do not fit the model: missing {missing}, unexpected {unexpected}")
    return model.eval()


def source_transformed(model):
    """The model after the llama export's source transforms (custom SDPA + KV-cache ops)."""
    import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401  (registers llama:: ops)
    from executorch.examples.models.llama import export_llama_lib
    from executorch.extension.llm.export.builder import DType

    transforms = export_llama_lib._get_source_transforms(
        DType.fp32, use_sdpa_with_kv_cache=True, use_kv_cache=True, vulkan=True
    )
    for transform in transforms:
        model = transform(model)
    return model


def lower(model, hp: LlamaHParams, max_seq_len: int, max_context_len: int, variants=(False,)):
    """Yield (force_fp16, ExecuTorch program manager) for each variant."""
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
    transforms = export_llama_lib._get_source_transforms(
        DType.fp32, use_sdpa_with_kv_cache=True, use_kv_cache=True, vulkan=True
    )
    manager = manager.source_transform(transforms)
    for force_fp16 in variants:
        # Traced again per variant: to_backend moves buffers (RoPE tables) of the edge program
        # it is given into the delegate, so one edge program cannot be lowered twice.
        manager.export()
        manager.run_canonical_optimizations()
        manager.export_to_edge()
        manager.to_backend([get_vulkan_partitioner("fp32", True, force_fp16)])
        yield force_fp16, manager.to_executorch().export_program
