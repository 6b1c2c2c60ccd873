"""sdpa's ``tiles`` form for prefills (flash attention, shaders/sdpa_tiles.wgsl): a
workgroup of 64 lanes per tile of query rows and head, K/V tiles of 32 cache rows staged
in workgroup memory once for the whole tile. ``plan`` fits the tile to the head dim and
the adapter's workgroup memory; ``kernel`` composes the shader for a plan, its per-lane
steps unrolled here (a register array indexed in a loop may go to local memory on
NVIDIA); ops/attention.py records it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..shaders.compose import Binding, Kernel, fill

LANES = 64  # a workgroup: 8 x 8 lanes for the scores
TK = 32  # cache rows per step
KP = TK // 4 + 1  # a K tile row in vec4s, padded by one (sdpa_tiles.wgsl)
# Query rows a tile: 16, and a tile's keys cut into up to PARTS parts, a workgroup each,
# of MIN_STEPS steps or more (sdpa_tiles.wgsl span()), merged by combine_tiles. H100,
# SmolLM2-135M prefill, attention ms at 256 / 1020 tokens (docs/performance.md, session
# 27): 32 rows 2.8 / 11.6; 32 rows in 4 parts 2.0 / 12.4 (8 parts 2.0 / 13.5); 16 rows in
# 4 parts 1.5 / 10.3; with parts, the merge adds 0.4 / 0.6
ROWS = 16
PARTS = 4
MIN_STEPS = 2


@dataclass(frozen=True)
class Tiles:
    """A tile plan: ``rows`` query rows per workgroup (TQ); ``shared``: V staged where K
    was (one tile's workgroup memory for both, at large head dims)."""
    dim: int
    rows: int
    shared: bool

    @property
    def score_rows(self) -> int:  # per lane: the scores' 8 lane rows cover TQ
        return self.rows // 8

    @property
    def out_rows(self) -> int:  # per lane, 8 columns each: TD / 8 lanes across a row
        return max(1, self.rows * self.dim // (8 * LANES))

    @property
    def v_at(self) -> int:  # vec4s before the V tile in kv_s
        return 0 if self.shared else self.dim * KP

    @property
    def kv_vec4s(self) -> int:
        return max(self.dim * KP, self.v_at + TK * self.dim // 4)

    @property
    def storage(self) -> int:
        """Workgroup bytes: q, the K/V tile(s), the weights, row factors and maxima, the
        softmax's per-lane partials, one u32."""
        return 4 * (self.rows * self.dim + 4 * self.kv_vec4s + TK * self.rows + 2 * self.rows
                    + LANES + 1)


def plan(dim: int, storage: int) -> Tiles | None:
    """The tile for head dim ``dim`` within ``storage`` bytes of workgroup memory: ROWS
    query rows; K and V apart where they fit (their loads go out together), else sharing
    (D = 128 on 32 KB adapters: shared, 29.0 KB)."""
    for shared in (False, True):
        t = Tiles(dim, ROWS, shared)
        if t.storage <= storage:
            return t
    return None


def why_not(dim: int, storage: int) -> str | None:
    """Why no tile plan serves head dim ``dim`` (None: one does)."""
    if dim & (dim - 1) or not 8 <= dim <= 512:
        return f"tiles head dims that are powers of two from 8 to 512 (head dim {dim})"
    if plan(dim, storage) is None:
        need = Tiles(dim, 16, True).storage
        return (f"needs {need} bytes of workgroup memory at head dim {dim}; the adapter "
                f"gives {storage}")
    return None


def parts_scratch(rows: int, heads: int, dim: int, parts: int) -> int:
    """Bytes of the parts' shares for ``rows`` query rows: (row, head, part) x (max, sum,
    ``dim`` weighted-V sums), float32."""
    return 4 * rows * heads * parts * (dim + 2)


@cache
def kernel(base: Kernel, t: Tiles, parts: int) -> Kernel:
    """``base`` (ops/attention.py's plain kernel) with attend_tiles and combine_tiles for
    plan ``t``, a tile's keys cut into up to ``parts`` parts."""
    consts = fill("sdpa_tiles", "attend_tiles", dim=t.dim, tq=t.rows, rs=t.score_rows,
                  ro=t.out_rows, shared=str(t.shared).lower(), v_at=t.v_at,
                  kv_size=t.kv_vec4s, parts=parts, min_steps=MIN_STEPS)
    return replace(base, bindings=base.bindings + VEC4_VIEWS,
                   generated=base.generated + consts + _stage(t.dim, "k") + _stage(t.dim, "v")
                   + _scores(t.score_rows) + _weigh(t.out_rows),
                   name=f"{base.name}_tiles_d{t.dim}_q{t.rows}_p{parts}"
                   + ("_shared" if t.shared else ""))


# attend_tiles reads k, v and the caches four elements a load, through these views alone
VEC4_VIEWS = (Binding(1, "k4", type="elem4"), Binding(2, "v4", type="elem4"),
              Binding(3, "k_cache4", "read_write", type="elem4"),
              Binding(4, "v_cache4", "read_write", type="elem4"))


def _stage(dim: int, which: str) -> str:
    """``stage_k`` / ``stage_v``: a step's TK rows of K (stored transposed) or V into kv_s,
    each lane's dim / 8 quads loaded before any is stored (unrolled: the loads go out
    together), the step's kind (sdpa_tiles.wgsl step_kind) choosing the source once."""
    quads = TK * dim // 4 // LANES
    at = "".join(f"  let r{u} = (lane + {64 * u}u) / (TD / 4u);\n"
                 f"  let e{u} = (lane + {64 * u}u) % (TD / 4u);\n"
                 f"  var x{u} = vec4<f32>(0.0);\n" for u in range(quads))
    fresh = "".join(f"    x{u} = vec4<f32>({which}4[row4(c0 + r{u} - start, head_at, e{u})]);\n"
                    for u in range(quads))
    cached = "".join(f"    x{u} = vec4<f32>({which}_cache4[row4(c0 + r{u}, head_at, e{u})]);\n"
                     for u in range(quads))
    getter = "key4" if which == "k" else "value4"
    tested = "".join(f"    if (c0 + r{u} < hi) {{ x{u} = {getter}(c0 + r{u}, start, head_at, e{u}); }}\n"
                     for u in range(quads))
    if which == "k":  # transposed: [TD][TK + 4]
        stores = "".join(f"  kv_s[(4u * e{u} + {q}u) * KP + r{u} / 4u][r{u} % 4u] = x{u}.{_XYZW[q]};\n"
                         for u in range(quads) for q in range(4))
    else:  # as it is: [TK][TD]
        stores = "".join(f"  kv_s[V_AT + r{u} * (TD / 4u) + e{u}] = x{u};\n" for u in range(quads))
    return (f"\nfn stage_{which}(c0: u32, hi: u32, start: u32, head_at: u32, lane: u32, "
            "kind: u32) {\n" + at + "  if (kind == 0u) {\n" + fresh
            + "  } else if (kind == 1u) {\n" + cached + "  } else {\n" + tested + "  }\n"
            + stores + "}\n")


_XYZW = "xyzw"


def _scores(rs: int) -> str:
    """``scores(ty, tx)``: the scaled scores of rows RS ty + i and keys 4 tx + j into
    p_s [key][row], products added along the head dim in order (as score())."""
    acc = "".join(f"  var s{i} = vec4<f32>(0.0);\n" for i in range(rs))
    fma = "".join(f"    s{i} += q.{_XYZW[i]} * k4;\n" for i in range(rs))
    stores = ""
    for j in range(4):
        key = f"4u * tx + {j}u"
        if rs == 4:
            row = ", ".join(f"s{i}.{_XYZW[j]}" for i in range(4))
            stores += f"  p_s[p_at({key}, 4u * ty)] = vec4<f32>({row}) * sc;\n"
        else:  # rs rows of a vec4 of four
            stores += "".join(f"  p_s[p_at({key}, ty * {rs}u + {i}u)][(ty * {rs}u + {i}u) % 4u]"
                              f" = s{i}.{_XYZW[j]} * sc;\n" for i in range(rs))
    return ("\nfn scores(ty: u32, tx: u32) {\n" + acc
            + "  for (var e = 0u; e < TD; e++) {\n"
            "    let q = q_s[e * (TQ / RS) + ty];\n"
            "    let k4 = kv_s[e * KP + tx];\n" + fma + "  }\n"
            "  let sc = params.scale;\n" + stores + "}\n")


def _weigh(rows: int) -> str:
    """``weigh`` (a step's weighted V into the lane's ``rows`` output rows, rescaled) and
    ``store_rows``, unrolled."""
    def weight(i: int) -> str:  # row base + i's weight of key c
        if rows % 4 == 0:
            return f"p{i // 4}.{_XYZW[i % 4]}"
        return f"p_s[p_at(c, base + {i}u)][(base + {i}u) % 4u]"
    loads = "".join(f"      let p{j} = p_s[p_at(c, base + {4 * j}u)];\n"
                    for j in range(rows // 4))

    def adds(guard: bool) -> str:
        out = ""
        for i in range(rows):
            add = (f"part[{2 * i}] += {weight(i)} * v_lo; "
                   f"part[{2 * i + 1}] += {weight(i)} * v_hi;")
            out += f"      if (c < m{i}) {{ {add} }}\n" if guard else f"      {add}\n"
        return out
    loop = ("    for (var c = 0u; c < TK; c++) {\n"
            "      let v_lo = kv_s[V_AT + c * (TD / 4u) + od];\n"
            "      let v_hi = kv_s[V_AT + c * (TD / 4u) + DL + od];\n" + loads + "ADDS    }\n")
    seen = "".join(f"    let m{i} = seen(s0 + base + {i}u, c0);\n" for i in range(rows))
    rescale = "".join(
        f"  (*acc)[{j}] = (*acc)[{j}] * row_fix[base + {j // 2}u] + part[{j}];\n"
        for j in range(2 * rows))
    stores = "".join(f"  store_row(s0 + base + {i}u, h, od, (*acc)[{2 * i}], "
                     f"(*acc)[{2 * i + 1}], row_fix[base + {i}u], row_top[base + {i}u], part);\n"
                     for i in range(rows))
    acc = "acc: ptr<function, array<vec4<f32>, 2u * RO>>"
    skip = "  if (base >= TQ) {\n    return;  // more lanes than rows x 8 columns\n  }\n"
    return (f"\nfn weigh({acc}, s0: u32, og: u32, od: u32, c0: u32, full: bool) {{\n"
            "  let base = og * RO;\n" + skip
            + "  var part = array<vec4<f32>, 2u * RO>();  // zeros at every step\n"
            "  if (full) {\n" + loop.replace("ADDS", adds(False)) + "  } else {\n" + seen
            + loop.replace("ADDS", adds(True)) + "  }\n" + rescale + "}\n"
            f"\nfn store_rows({acc}, s0: u32, h: u32, og: u32, od: u32, part: Part) {{\n"
            "  let base = og * RO;\n" + skip + stores + "}\n")
