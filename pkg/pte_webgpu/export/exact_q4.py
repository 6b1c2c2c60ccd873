"""A GGUF's Q4_0 / Q4_1 linears kept as they are in the q4 program, not quantized again.

The llama export's 4w transform (torchao IntxWeightOnlyConfig, int4 groups of 32) quantizes
the float weights it is given; a GGUF's 4-bit blocks dequantized to float and quantized
again lose what the second rounding moves (9% relative RMS on SmolLM2's Q4_1 linears).
Here, after that transform, each linear whose GGUF tensor is Q4_0 or Q4_1 gets the GGUF's
own int4 values and scales (export/gguf_groups.py), which q4gsw's symmetric groups hold
exactly. Q4_1's per-group offset o (x = s * q + o) has no place in q4gsw (ExecuTorch 1.5.1's
pattern reads no zero points), so it becomes a small float linear of its own over the
input's group sums:

    y = q4gsw(x) + linear(sum of x over each group of 32, offsets [N, K / 32])

ExecuTorch lowers the second term as view + sum + linear + add inside the one delegate; the
runtime folds it into the 4-bit kernel (runtime/fusion_q4.py).

A Q4_0 embedding table takes its groups as they are too (embedding_q4gsw is symmetric); a
Q4_1 or 8-bit one is quantized by the transform. An lm head that is not 4-bit in the GGUF
stays 8-bit, not 4-bit groups: quantizing it to 4 bits cost more top-1 agreement than all
the layers' linears together (docs/llm.md, "q4"). A tied one (SmolLM2's Q8_0 embedding)
shares one 8-bit table with the gather (export/split_table.py); an untied one is an 8-bit
per-channel linear (Int8Linear: ExecuTorch's Vulkan pattern makes it
``aten._weight_int8pack_mm``).
"""

from __future__ import annotations

import numpy as np

from .gguf_groups import GROUP, Int4Groups


def groups(reader, hp) -> dict[str, Int4Groups]:
    """The exact int4 groups of every Q4_0 / Q4_1 linear weight of the GGUF, keyed like the
    llama example model (a tied lm head under ``output.weight`` too)."""
    from . import gguf_groups, gguf_llama

    found = gguf_llama.arrays(reader, hp, load=gguf_groups.int4_groups)
    if hp.tied_output and "tok_embeddings.weight" in found:
        found["output.weight"] = found["tok_embeddings.weight"]
    return found


def _offset_linear_class():
    import torch

    class OffsetLinear(torch.nn.Module):
        """``linear(x) + linear(group sums of x, offsets)``: a 4-bit linear with per-group
        offsets (Q4_1's minimum) that its symmetric groups cannot hold."""

        def __init__(self, linear, offsets: np.ndarray):
            super().__init__()
            self.linear = linear
            self.register_buffer("offsets", torch.from_numpy(np.ascontiguousarray(offsets)))

        def forward(self, x):
            sums = x.unflatten(-1, (-1, GROUP)).sum(-1)
            return self.linear(x) + torch.nn.functional.linear(sums, self.offsets)

        def dequantized_weight(self):
            w = self.linear.weight.dequantize()
            return w + self.offsets.repeat_interleave(GROUP, dim=1)

    return OffsetLinear


def _int8_linear_class():
    import torch

    class Int8Linear(torch.nn.Module):
        """A bias-free linear with int8 weights and one scale per output row (symmetric),
        dequantized by ``quantized_decomposed.dequantize_per_channel``: the pattern the
        Vulkan partitioner turns into ``aten._weight_int8pack_mm``."""

        def __init__(self, weight):
            super().__init__()
            w = weight.detach().float()
            scales = (w.abs().amax(dim=1) / 127).clamp(min=torch.finfo(torch.float32).tiny)
            self.register_buffer("weight", torch.round(w / scales[:, None]).clamp(-127, 127)
                                 .to(torch.int8))
            self.register_buffer("scales", scales)
            self.register_buffer("zero_points", torch.zeros(w.shape[0], dtype=torch.int64))

        def forward(self, x):
            return torch.nn.functional.linear(x, self.dequantized_weight())

        def dequantized_weight(self):
            return torch.ops.quantized_decomposed.dequantize_per_channel(
                self.weight, self.scales, self.zero_points, 0, -128, 127, torch.int8)

    return Int8Linear


def int8_head(model) -> None:
    """The model's untied lm head (``output``, a float nn.Linear) as an Int8Linear; before
    the 4w transform, which quantizes nn.Linear modules only."""
    from torch.ao.quantization.fx import _decomposed  # noqa: F401  (registers quantized_decomposed)

    if model.output.bias is not None:
        raise ValueError("an lm head with a bias has no 8-bit form here")
    model.output = _int8_linear_class()(model.output.weight)


def apply(model, exact: dict[str, Int4Groups]) -> int:
    """Give each 4w-quantized linear of ``model`` named in ``exact`` its GGUF int4 values
    and scales (zero points 0), wrapping it in an OffsetLinear when the groups have
    offsets. Returns how many linears took them. Call after the 4w transform."""
    import torch

    offset_linear = _offset_linear_class()
    modules = dict(model.named_modules())
    done = 0
    for key, g in exact.items():
        name = key.rpartition(".")[0]
        if key == "tok_embeddings.weight":
            done += _embedding(modules[name], g)
            continue
        linear = modules.get(name)
        if not isinstance(linear, torch.nn.Linear):
            continue
        w = linear.weight
        inner = getattr(w, "qdata", None)
        if inner is None or tuple(getattr(w, "block_size", ())) != (1, GROUP) \
                or tuple(inner.shape) != g.values.shape:
            raise ValueError(f"{name}: expected a 4w-quantized weight of shape "
                             f"{list(g.values.shape)} in groups of {GROUP}")
        with torch.no_grad():
            w.qdata.copy_(torch.from_numpy(g.values))
            w.zero_point.zero_()
            w.scale = _scales(g.scales, w.scale.dtype)
        if g.offsets is not None:
            parent_name, _, leaf = name.rpartition(".")
            parent = modules[parent_name] if parent_name else model
            setattr(parent, leaf, offset_linear(linear, g.offsets))
        done += 1
    return done


def _scales(scales: np.ndarray, dtype):
    """The groups' scales as the linear keeps them: float16 where every one is a float16
    value (a GGUF's Q4_0 / Q4_1 scales are), so the program stores half the bytes (6.6 MB
    of SmolLM2's 110; torchao multiplies them into the float32 weights in float32, and the
    runtime widens them at upload beside float32 activations); else ``dtype``."""
    import torch

    half = scales.astype(np.float16)
    if np.isfinite(half).all() and np.array_equal(half.astype(scales.dtype), scales):
        return torch.from_numpy(half)
    return torch.from_numpy(scales).to(dtype)


def _embedding(table, g: Int4Groups) -> int:
    """The 4-bit embedding (the -E 4,32 transform's QuantizedGroupEmbedding: bytes
    (q[2i] + 8) * 16 + q[2i + 1] + 8, scales [V, D / 32]) given a Q4_0 table's groups as
    they are; a Q4_1 table (offsets) keeps the transform's symmetric quantization, which
    has no place for them. Returns 1 when it took them."""
    import torch

    weight, scales = getattr(table, "weight", None), getattr(table, "scales", None)
    if g.offsets is not None or weight is None or scales is None \
            or tuple(weight.shape) != (g.shape[0], g.shape[1] // 2) \
            or tuple(scales.shape) != g.scales.shape:
        return 0
    u = (g.values.astype(np.int16) + 8).astype(np.uint8)
    with torch.no_grad():
        weight.copy_(torch.from_numpy(u[:, 0::2] * 16 + u[:, 1::2]))
        scales.copy_(torch.from_numpy(g.scales).to(scales.dtype))
    return 1
