"""The split attention's merge left to the linear that reads its output (the o
projection): runtime/fusion_merge.py marks the pair (graph.meta["merged"]); at build an
attention that takes the flash-decoding pair for one-row executes (ops/attention.py
``split``, ``tiles``) records its parts but not their merge, and leaves a ``MergedInput``
in ``ctx.merges`` under the linear's input. The linear's product (ops/matmul.py,
ops/linear_q4.py) takes it as its input prologue: matrix-vector forms that take it merge
each input element as they load it (float gemv: shaders/matmul_parts.wgsl gemv_merge;
4-bit wide and keep: shaders/linear_q4_parts.wgsl row_merge; both through snippets.wgsl
attention_merge, the steps and roundings of the merge's own kernel), so a decode step
loses a dispatch a layer; where the form chosen for one row does not, the merge's own
dispatch is recorded first, as before."""

from __future__ import annotations

from .matmul import InputPrologue

# Each workgroup of a merging linear holds a factor per (head, part), a sum per head and
# the merged row in workgroup memory (snippets.wgsl attention_merge): at most 6 KB of it,
# beside the forms' own (16 KB is WebGPU's least limit).
MAX_FACTORS = 512
MAX_ROW = 1024


def workgroup_bytes(heads: int, dim: int, parts: int) -> int:
    return 4 * (heads * parts + heads + heads * dim)


def can_merge(heads: int, dim: int, parts: int) -> bool:
    """Whether a linear's prologue can merge these parts (else the merge's own dispatch)."""
    return heads * parts <= MAX_FACTORS and heads * dim <= MAX_ROW and (heads * dim) % 8 == 0


class MergedInput(InputPrologue):
    """The parts buffer at the form's extra binding, in place of the linear's input;
    ``record`` the merge's shape (heads, head dim, parts); ``own_dispatch()`` records the
    merge's own dispatch. One row only: parts are written for one-row executes alone."""

    max_rows = 1

    def __init__(self, ctx, op, x_id: int, parts, shape: tuple, own_dispatch):
        super().__init__(ctx, op, x_id, parts, {"merge": tuple(shape)})
        self.own_dispatch = own_dispatch
        self.workgroup_bytes = workgroup_bytes(*shape)

    def bind(self, bindings, extra: int) -> list:
        """A merging form reads the parts alone: no input at 0 (its layout has none)."""
        return [(b, v) for b, v in bindings if b != 0] + [(extra, self.extra_id)]

    async def cover(self, forms, prologue) -> None:
        """The merge's own dispatch unless the fewest rows' form (one row) merges; more
        rows never need it (the attention's rows or tiles form wrote the input)."""
        if not prologue[-1]:
            await self.own_dispatch()
