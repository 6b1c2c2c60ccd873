"""Matrix products: ``aten.linear.default [input, weight, bias|Null, out]``.

input ``[..., K]`` (leading dims flattened into M), weight ``[N, K]``, bias ``[N]``;
out ``[..., N]`` = input · weightᵀ + bias, f32 accumulation in every form (float16
tensors are stored as f16). A family of kernels, one chosen per op from M, N, K and the
adapter (``choose``), as rms_norm's is:

- ``gemv4-WGxC[xD]`` (shaders/matmul_gemv.wgsl): matrix-vector for decode, up to 4 rows
  per workgroup of WG lanes that sweep K together (a long K is split across them), C (1,
  2 or 4) output columns each, D loads in flight per lane and column (2 when not named);
  lane sums meet in a halving tree in workgroup memory. ``gemvsg4-WGxC``: the same
  summed with subgroupAdd (adapters with subgroups; no barrier when WG fits in one
  subgroup). ``gemv8``/``gemvsg8``: float16 weights in 16-byte loads of 8 halves
  (K % 8 == 0; float32 programs load vec4s, already 16 bytes). A suffix ``gG``: G
  column groups per workgroup, WG / G lanes each (a short K: fewer, fuller workgroups).
- ``mm4-TWxTK`` (shaders/matmul_tile8.wgsl): tiled matrix-matrix for prefill, TW x TW
  lanes per (8 TW)² output tile, 8 x 8 outputs per lane in registers, K in steps of TK
  through workgroup memory. ``record`` takes any bindings and sizes: bmm can reuse it.
- ``tiled`` (shaders/matmul.wgsl): the original (4 tw)² tiles, 4 x 4 per lane.
- ``dot`` (same file): one output per invocation, no workgroup memory and no barrier:
  CPU adapters, where a barrier costs more than the reuse.

Every form stores through an epilogue ``put(row, col, v)`` (``EPILOGUES``), so the same
forms serve ``pte_webgpu.fused_linear`` (runtime/fusion.py): linears that share an input
as one product over their weights stacked at load, each column range written to its own
output, or a linear with the residual add after it folded in.

A ``4`` after the kind means vec4 loads; when K % 4 != 0 the same shape loads scalars.
Forcing a variant (tests, benchmarks): ``variants={"matmul": NAME}`` in the Runtime
options, else the environment variable ``PTE_WEBGPU_MATMUL`` (ops/variants.py).
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, replace
from functools import cache
from math import prod

from ..errors import FormatError, UnsupportedError
from ..model.graph import Null, TensorValue
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from . import sizes
from .common import elementwise_workgroup
from .exec_ints import follow_actual_size
from .registry import define
from .variants import TYPICAL_ADAPTERS, declare

MAX_THREADS_PER_SIDE = 8  # tiled: 8 x 8 invocations, 32 x 32 outputs per workgroup
GEMV_COLS = (1, 2, 4)  # columns per gemv workgroup (shaders/matmul_gemv.wgsl)
GEMV_MAX_ROWS = 4  # rows per gemv workgroup (the vec4 of sums)
DECODE_ROWS = 8  # up to this many rows the matrix-vector form is chosen (CPU adapters)
# On GPUs up to this many: at 16-256 rows of SmolLM2's shapes (K, N of 192-1536) the gemv
# form (4 rows per workgroup, the weight read M/4 times, mostly from L2) took 8-44 us on
# the H200 where the tiles took 90-240 us: their few workgroups run the K loop serially.
GPU_GEMV_ROWS = 256
_NAME = re.compile(r"^(gemv|gemvsg|mm)([48]?)-(\d+)x(\d+)(?:x(\d+))?(?:g(\d+))?$")
GEMV_DEPTHS = (1, 2, 4, 8)  # loads in flight per lane and column

PARAMS = Uniform(("m", "u32"), ("n", "u32"), ("k", "u32"), ("has_bias", "u32"),
                 ("tiles_n", "u32"),  # workgroups across N
                 ("tiles", "u32"),  # workgroups in all
                 ("n0", "u32"), ("n1", "u32"))  # split epilogues: where out1, out2 begin
# Bindings 0-2 in two views each (entry points main: scalars, main_vec4: vec4s).
# Without a bias the weight stands in for binding 4; the shader never reads it.
_BINDINGS = (Binding(0, "input"), Binding(1, "weight"), Binding(2, "out", "read_write"),
             Binding(4, "bias"), Binding(0, "input4", type="elem4"),
             Binding(1, "weight4", type="elem4"), Binding(1, "weight8", type="vec4<u32>"))

# Epilogues: `put(row, col, v)` stores output (row, col) = v (bias added). "" one output;
# "split2"/"split3": columns [0, n0), [n0, n1), [n1, n) go to out, out1, out2 (linears
# sharing an input, their weights stacked: one dispatch); "residual": out = resid + v,
# rounded as the unfused linear then add.Tensor round (f32(elem(v))), the add's order kept.
_PUT = "fn put(row: u32, col: u32, v: f32) {{\n{}}}\n"
_OUT0 = "  if (col < params.n0) {\n    out[row * params.n0 + col] = elem(v);\n    return;\n  }\n"
_OUT1 = "out1[row * ({end} - params.n0) + col - params.n0] = elem(v);"
EPILOGUES = {
    "": ((), _PUT.format("  out[row * params.n + col] = elem(v);\n")),
    "split2": ((Binding(5, "out1", "read_write"),),
               _PUT.format(_OUT0 + "  " + _OUT1.format(end="params.n") + "\n")),
    "split3": ((Binding(5, "out1", "read_write"), Binding(6, "out2", "read_write")),
               _PUT.format(_OUT0 + "  if (col < params.n1) {\n    "
                           + _OUT1.format(end="params.n1") + "\n    return;\n  }\n"
                           "  out2[row * (params.n - params.n1) + col - params.n1] = elem(v);\n")),
    "residual": ((Binding(5, "resid"),),
                 _PUT.format("  let at = row * params.n + col;\n"
                             "  out[at] = elem(f32(resid[at]) + f32(elem(v)));\n")),
}
_STAGE = "fn stage(m0: u32, n0: u32, k0: u32, li: u32) {{ stage_{}(m0, n0, k0, li); }}\n"


def _with_epilogue(name: str, epilogue: str, generated: str = "", **kw) -> Kernel:
    extra, put = EPILOGUES[epilogue]
    return Kernel(kw.pop("body", name), _BINDINGS + extra, PARAMS, uniform_binding=3,
                  generated=generated + put, name=name + (f"_{epilogue}" if epilogue else ""),
                  **kw)


def kernel(form: str, epilogue: str = "", rows: int = 1, depth: int = 2,
           col_groups: int = 1) -> Kernel:
    """The shader of one form ("basic": tiled and dot; "tile8", "tile8_vec4"; "gemv",
    "gemvsg_browser", "gemvsg_native" with ``rows``, ``depth`` and ``col_groups``) and
    epilogue."""
    if not form.startswith("gemv"):
        rows, depth, col_groups = 1, 2, 1
    return _kernel(form, epilogue, rows, depth, col_groups)


@cache
def _kernel(form: str, epilogue: str, rows: int, depth: int, col_groups: int) -> Kernel:
    if form == "basic":
        return _with_epilogue("matmul", epilogue,
                              entries=(Entry("dot", "dot_item", "params.m * params.n"),))
    if form.startswith("tile8"):
        vec = form.endswith("vec4")
        return _with_epilogue("matmul_tile8" + ("_vec4" if vec else ""), epilogue,
                              _STAGE.format("vec4" if vec else "scalar"), body="matmul_tile8")
    subgroups = form != "gemv"
    # One kernel per row count (a const: naga 29 panics when ``rows`` is an override).
    # Chromium needs `enable subgroups;`; wgpu-native's naga rejects it and takes the
    # builtins when the device has the "subgroup" feature.
    name = {"gemv": "matmul_gemv", "gemvsg_browser": "matmul_gemv_sg",
            "gemvsg_native": "matmul_gemv_sg_native"}[form]
    suffix = (f"_d{depth}" if depth != 2 else "") + (f"_g{col_groups}" if col_groups > 1 else "")
    return _with_epilogue(f"{name}_r{rows}{suffix}", epilogue,
                          _gemv_generated(subgroups, rows, depth, col_groups),
                          body="matmul_gemv", snippets=("flat_index",),
                          enables=("subgroups",) if form == "gemvsg_browser" else ())


# The gemv sweeps (one per load width), reductions and entry points, appended to
# shaders/matmul_gemv.wgsl's steps.
_SWEEP = """
fn sweep_{form}(b: Block, sub: u32) -> Sums {{
  var s: Sums;
  let span = wg_size / col_groups;  // the group's lanes
  let len = params.k / {per_step}u;  // steps along K
  let rb = row_bases(b, params.k / {per_input}u);
  let cb = col_bases(b, len);
  var j = sub;
  for (; j + (depth - 1u) * span < len; j += depth * span) {{
{steps}  }}
  for (; j < len; j += span) {{
    s = step_{form}(s, rb, cb, j);
  }}
  return s;
}}
"""
# (entry point, sweep, elements per step, elements per input index)
_GEMV_FORMS = (("main", "scalar", 1, 1), ("main_vec4", "vec4", 4, 4),
               ("main_packed", "packed", 8, 4))
# `me`: the lane's number in the workgroup; where the workgroup is one subgroup, its
# subgroup lane (the implementation numbers those: shuffles address them).
_GEMV_ENTRY = """
@compute @workgroup_size(wg_size)
fn {name}(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32{sg_params}) {{
  let g = group_index(wid, groups);
  if (g >= params.tiles) {{
    return;  // uniform for the whole workgroup
  }}
  let me = {me};
  let span = wg_size / col_groups;
  let sub = me % span;  // lane within its column group
  let b = block_of(g, me / span);
  write_column(b, sub, lanes_sum({sweep}(b, sub), me{sg_args}));
}}
"""
_TREE_SUM = """
var<workgroup> part: array<vec4<f32>, wg_size * cols>;  // [column][lane]

// Lane c (< cols) of each column group gets its column c's total over the group's
// lanes: a halving tree in workgroup memory.
fn tree_sum(s: Sums, me: u32) -> vec4<f32> {
  part[me] = s.c0;
  if (cols > 1u) { part[wg_size + me] = s.c1; }
  if (cols > 2u) {
    part[2u * wg_size + me] = s.c2;
    part[3u * wg_size + me] = s.c3;
  }
  workgroupBarrier();
  let sub = me % (wg_size / col_groups);
  for (var stride = wg_size / col_groups / 2u; stride > 0u; stride /= 2u) {
    if (sub < stride) {
      for (var c = 0u; c < cols; c++) {
        part[c * wg_size + me] += part[c * wg_size + me + stride];
      }
    }
    workgroupBarrier();
  }
  return part[min(sub, cols - 1u) * wg_size + me - sub];
}

fn pick(t: Sums, c: u32) -> vec4<f32> {
  return select(select(select(t.c0, t.c1, c == 1u), t.c2, c == 2u), t.c3, c == 3u);
}
"""
_TREE_LANES = """
fn lanes_sum(s: Sums, me: u32) -> vec4<f32> {
  return tree_sum(s, me);
}
"""
_SUBGROUP_SUM = """
// Lane c (< cols) of each column group gets its column c's total. One column group:
// subgroupAdd, and when the workgroup spans several subgroups their totals meet in
// workgroup memory (which lanes share a subgroup is the implementation's choice: each
// subgroup's first lane posts, the others zeros). Several groups in a workgroup that is
// one subgroup: butterflies within each group's lanes (subgroupShuffleXor); in several
// subgroups, the tree.
fn lanes_sum(s: Sums, me: u32, sg_size: u32, sg_lane: u32) -> vec4<f32> {
  if (col_groups > 1u) {
    if (sg_size != wg_size) {
      return tree_sum(s, me);
    }
    var t = s;
    for (var m = wg_size / col_groups / 2u; m > 0u; m /= 2u) {
      t.c0 += subgroupShuffleXor(t.c0, m);
      if (cols > 1u) { t.c1 += subgroupShuffleXor(t.c1, m); }
      if (cols > 2u) {
        t.c2 += subgroupShuffleXor(t.c2, m);
        t.c3 += subgroupShuffleXor(t.c3, m);
      }
    }
    return pick(t, me % (wg_size / col_groups));
  }
  var t = Sums(subgroupAdd(s.c0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  if (cols > 1u) { t.c1 = subgroupAdd(s.c1); }
  if (cols > 2u) {
    t.c2 = subgroupAdd(s.c2);
    t.c3 = subgroupAdd(s.c3);
  }
  if (sg_size >= wg_size) {  // the whole workgroup is one subgroup: no barrier
    return pick(t, me);
  }
  let lead = sg_lane == 0u;
  let zero = vec4<f32>(0.0);
  part[me] = select(zero, t.c0, lead);
  if (cols > 1u) { part[wg_size + me] = select(zero, t.c1, lead); }
  if (cols > 2u) {
    part[2u * wg_size + me] = select(zero, t.c2, lead);
    part[3u * wg_size + me] = select(zero, t.c3, lead);
  }
  workgroupBarrier();
  var all = vec4<f32>(0.0);
  if (me < cols) {
    for (var i = 0u; i < wg_size; i++) {
      all += part[me * wg_size + i];
    }
  }
  return all;
}
"""


def _gemv_generated(subgroups: bool, rows: int, depth: int, col_groups: int) -> str:
    sg_params = sg_args = ""
    me = "lane"
    if subgroups:
        sg_params = (",\n    @builtin(subgroup_size) sg_size: u32,"
                     " @builtin(subgroup_invocation_id) sg_lane: u32")
        sg_args = ", sg_size, sg_lane"
        me = "select(lane, sg_lane, sg_size == wg_size)"
    steps = "".join(f"    s = step_{{form}}(s, rb, cb, j + {i}u * span);\n"
                    for i in range(depth))
    sweeps = "".join(_SWEEP.format(form=f, per_step=ps, per_input=pi,
                                   steps=steps.replace("{form}", f))
                     for _, f, ps, pi in _GEMV_FORMS)
    entries = "".join(_GEMV_ENTRY.format(name=n, sweep="sweep_" + f, sg_params=sg_params,
                                         sg_args=sg_args, me=me) for n, f, _, _ in _GEMV_FORMS)
    return (f"const rows: u32 = {rows}u;  // input rows per workgroup\n"
            f"const depth: u32 = {depth}u;  // steps per iteration: loads in flight\n"
            f"const col_groups: u32 = {col_groups}u;  // column groups per workgroup\n"
            + sweeps + _TREE_SUM + (_SUBGROUP_SUM if subgroups else _TREE_LANES) + entries)


KERNEL = kernel("basic")  # the plain shaders, declared at import (tests compose them)
TILE8 = {vec: kernel("tile8_vec4" if vec else "tile8") for vec in (False, True)}
GEMV = {rows: kernel("gemv", rows=rows) for rows in range(1, GEMV_MAX_ROWS + 1)}


@dataclass(frozen=True)
class Variant:
    kind: str  # "gemv" | "gemvsg" | "mm" | "tiled" | "dot"
    vec4: bool = False
    a: int = 0  # gemv: lanes per workgroup; mm: lanes per side
    b: int = 0  # gemv: columns per workgroup; mm: K per step
    depth: int = 2  # gemv: loads in flight per lane and column
    packed: bool = False  # gemv: f16 weights in 16-byte loads (implies vec4)
    groups: int = 1  # gemv: column groups per workgroup

    @property
    def name(self) -> str:
        if self.kind in ("tiled", "dot"):
            return self.kind
        width = "8" if self.packed else "4" if self.vec4 else ""
        depth = f"x{self.depth}" if self.depth != 2 else ""
        groups = f"g{self.groups}" if self.groups > 1 else ""
        return f"{self.kind}{width}-{self.a}x{self.b}{depth}{groups}"

    def for_k(self, k: int) -> "Variant":
        """Packed loads need K % 8 == 0, vec4 loads K % 4 == 0: other K load narrower,
        same shape."""
        if self.packed and k % 8:
            return replace(self, packed=False).for_k(k)
        return self if not self.vec4 or k % 4 == 0 else replace(self, vec4=False)

    def for_dtype(self, half: bool) -> "Variant":
        """Packed loads are for f16 weights: f32 ones already load 16 bytes as vec4s."""
        return replace(self, packed=False) if self.packed and not half else self

    @property
    def entry(self) -> str:
        return "main_packed" if self.packed else "main_vec4" if self.vec4 else "main"


def parse(name: str) -> Variant:
    name = name.strip()
    if name in ("tiled", "dot"):
        return Variant(name)
    m = _NAME.match(name)
    if not m:
        raise UnsupportedError(f"matmul variant {name!r}: names look like gemv4-64x4, "
                               "gemvsg4-32x4, mm4-16x8, tiled, dot")
    kind, width, depth, groups = m.group(1), m.group(2), m.group(5), m.group(6)
    if kind == "mm" and (width == "8" or depth or groups):
        raise UnsupportedError(f"matmul variant {name!r}: tiles are mm4-TWxTK or mm-TWxTK")
    v = Variant(kind, width != "", int(m.group(3)), int(m.group(4)), int(depth or 2),
                width == "8", int(groups or 1))
    if v.depth not in GEMV_DEPTHS:
        raise UnsupportedError(f"matmul variant {name!r}: {GEMV_DEPTHS} loads in flight")
    if kind != "mm" and (not _pow2(v.groups) or v.a // v.groups < v.b):
        raise UnsupportedError(f"matmul variant {name!r}: column groups: a power of two, "
                               "each with at least as many lanes as columns")
    if not _pow2(v.a):
        raise UnsupportedError(f"matmul variant {name!r}: {v.a} lanes: a power of two")
    if v.kind == "mm" and (v.b < 4 or v.b % 4):
        raise UnsupportedError(f"matmul variant {name!r}: K per step must be a multiple of 4")
    if v.kind != "mm" and v.b not in GEMV_COLS:
        raise UnsupportedError(f"matmul variant {name!r}: {GEMV_COLS} columns")
    return v


VARIANTS = declare("matmul", ("gemv4-32x1", "gemvsg4-32x4", "mm4-16x8", "tiled", "dot"),
                   parse=parse, doc="gemv[sg]4-LANESxCOLS: matrix-vector (decode); "
                   "mm4-TWxTK: 8x8-per-lane tiles (prefill); tiled: 32x32 tiles; dot: one "
                   "dot product per output (CPU adapters)")


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _floor_pow2(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


# --- adapters -------------------------------------------------------------------------
def has_subgroups(adapter) -> bool:
    """subgroupAdd usable: the browser's `subgroups` or wgpu-native's `subgroup` feature
    (naga takes the builtins without `enable subgroups;`, so not traits.subgroups)."""
    return bool({"subgroups", "subgroup"} & set(adapter.features))


def is_cpu(adapter) -> bool:
    return adapter.traits.is_cpu


def max_invocations(adapter) -> int:
    return adapter.traits.max_invocations


def _storage(adapter) -> int:
    return int(adapter.limits.get("maxComputeWorkgroupStorageSize") or 16384)


def supported(v: Variant, adapter) -> str | None:
    """Why ``v`` cannot run on ``adapter`` (None when it can)."""
    top = max_invocations(adapter)
    lanes = v.a * v.a if v.kind == "mm" else v.a
    if v.kind in ("gemv", "gemvsg", "mm") and lanes > top:
        return f"{lanes} invocations per workgroup exceed the adapter's {top}"
    if v.kind in ("gemv", "gemvsg") and 16 * v.a * v.b > _storage(adapter):
        return "workgroup storage too small"
    if v.kind == "mm" and 64 * v.a * v.b > _storage(adapter):
        return "workgroup storage too small"
    if v.kind == "gemvsg" and not has_subgroups(adapter):
        return "needs subgroups"
    return None


def choose(adapter, m: int, n: int, k: int, half: bool = False) -> Variant:
    """The selection rule (measured on an H200, native Vulkan: docs/performance.md).

    CPU adapters: ``_choose_cpu``. GPUs, up to GPU_GEMV_ROWS rows: matrix-vector in
    workgroups of 32 lanes (one subgroup on NVIDIA: subgroup sums need no barrier; wider
    workgroups were slower at every decode shape measured), 4 columns each from N =
    16384 or from 33 rows, 2 from N = 1024, else 1; subgroup sums where the adapter has
    them. One row (decode): float16 weights in 16-byte loads; float32 ones from K = 2048
    4 loads in flight per lane and column; a short K against a wide N (the lm head) in column
    groups, 2 (float32) or 4 (float16) per workgroup. More rows: the 8 x 8-per-lane
    tiles, 128 wide when that gives at least 128 tiles, else 64, K in steps of 16 (8
    where workgroup storage is short).
    """
    if is_cpu(adapter):
        return _choose_cpu(adapter, m, k)
    top = max_invocations(adapter)
    if m <= GPU_GEMV_ROWS:
        cols = 4 if n >= 16384 or m > 32 else 2 if n >= 1024 else 1
        kind = "gemvsg" if has_subgroups(adapter) else "gemv"
        pick = Variant(kind, True, min(32, _floor_pow2(top)), cols)
        if m == 1:
            # 4 loads in flight: 4096 x 4096 float32 0.77x -> 0.81x the copy kernel; at
            # SmolLM2's K of 576 and 1536 ~10% slower in the model (H200)
            pick = replace(pick, packed=half, depth=4 if k >= 2048 and not half else 2)
            if k <= 1024 and n >= 16384:
                pick = replace(pick, depth=2, groups=min(4 if half else 2, pick.a // cols))
        while pick.b > 1 and supported(pick, adapter):
            pick = replace(pick, b=pick.b // 2)
    else:
        tw = 16 if -(-m // 128) * -(-n // 128) >= 128 else 8
        pick = Variant("tiled")
        for t, step in ((tw, 16), (tw, 8), (8, 16), (8, 8)):
            v = Variant("mm", True, t, step)
            if supported(v, adapter) is None:
                pick = v
                break
    return pick.for_k(k)


def _choose_cpu(adapter, m: int, k: int) -> Variant:
    """CPU adapters (lavapipe, SwiftShader) run a workgroup's lanes as SIMD vectors: a
    matrix-vector workgroup as wide as one vector (8 lanes where the adapter may run
    subgroups of 8 or more, else 4) sums with subgroupAdd and no barrier; more rows, 8 x 8
    tiles. Measured against ``dot`` (docs/performance.md): 1.5-2.3x faster at decode
    shapes on lavapipe, 1-2x on SwiftShader, 3-7x at 37-row prefill on lavapipe."""
    if m <= DECODE_ROWS:
        sizes = adapter.traits.subgroup_sizes
        lanes = 8 if sizes and sizes[1] >= 8 else 4
        pick = Variant("gemvsg" if has_subgroups(adapter) else "gemv", True, lanes, 4)
    else:
        pick = Variant("mm", True, 8, 8)
    return (pick if supported(pick, adapter) is None else Variant("dot")).for_k(k)


def candidates(adapter, m: int, k: int, half: bool = False) -> list[Variant]:
    """Variants worth measuring for M rows (bench/), all runnable here."""
    names = []
    if m <= (DECODE_ROWS if is_cpu(adapter) else GPU_GEMV_ROWS):
        names += [f"gemv4-{wg}x{c}" for wg in (32, 64, 128, 256) for c in GEMV_COLS]
        names += [f"gemvsg4-{wg}x{c}" for wg in (32, 64, 128) for c in GEMV_COLS]
        # one subgroup per workgroup, more loads in flight, f16 in 16-byte loads
        names += [f"gemv{sg}{w}-32x{c}x{d}" for sg in ("", "sg") for w in (4, 8)
                  for c in GEMV_COLS for d in (2, 4)]
        # several column groups per workgroup (short K)
        names += [f"gemvsg{w}-{wg}x{c}g{g}" for w in (4, 8) for wg in (32, 64, 128)
                  for c in (2, 4) for g in (2, 4, 8) if wg // g >= 8]
    if m > DECODE_ROWS:
        names += ["mm4-16x8", "mm4-16x16", "mm4-16x4", "mm4-8x8", "mm4-8x16", "tiled"]
    if is_cpu(adapter):
        names += ["dot"] + ([f"gemv{sg}4-{wg}x{c}" for sg in ("", "sg") for wg in (4, 8)
                             for c in (1, 4)] if m <= DECODE_ROWS else [])
    out = []
    for name in names:
        v = parse(name).for_k(k).for_dtype(half)
        if supported(v, adapter) is None and v not in out:
            out.append(v)
    return out


def fit(v: Variant, adapter, k: int) -> Variant:
    """A forced variant for this K, or UnsupportedError when the adapter cannot run it."""
    v = v.for_k(k)
    why = supported(v, adapter)
    if why:
        raise UnsupportedError(f"matmul variant {v.name!r} cannot run on "
                               f"{adapter.summary()}: {why}")
    return v


# --- recording ------------------------------------------------------------------------
def threads_per_side(max_invocations: int) -> int:
    """The largest power of two t <= 8 with t * t invocations within the adapter's limit."""
    t = MAX_THREADS_PER_SIDE
    while t > 1 and t * t > max_invocations:
        t //= 2
    return t


def tile_counts(m: int, n: int, tile: int) -> tuple[int, int]:
    """(tiles across N, tiles in all) for an M x N output in tile x tile blocks."""
    tiles_n = -(-n // tile)
    return tiles_n, tiles_n * -(-m // tile)


def _shape(ctx, v: Variant, m: int, n: int, epilogue: str = ""):
    """(kernel, constants, tiles_n, tiles, workgroups) of variant ``v``."""
    if v.kind == "dot":
        wg = elementwise_workgroup(ctx)
        return kernel("basic", epilogue), {"wg_size": wg}, 0, 0, -(-m * n // wg)
    if v.kind == "tiled":
        t = threads_per_side(ctx.limit("maxComputeInvocationsPerWorkgroup", 256))
        tiles_n, tiles = tile_counts(m, n, 4 * t)
        return kernel("basic", epilogue), {"tw": t}, tiles_n, tiles, tiles
    if v.kind == "mm":
        tiles_n, tiles = tile_counts(m, n, 8 * v.a)
        form = "tile8_vec4" if v.vec4 else "tile8"
        return kernel(form, epilogue), {"tw": v.a, "tk": v.b}, tiles_n, tiles, tiles
    form = "gemv" if v.kind == "gemv" else (
        "gemvsg_browser" if ctx.device.info.backend == "browser" else "gemvsg_native")
    rows = min(GEMV_MAX_ROWS, m)
    tiles_n = -(-n // (v.b * v.groups))
    tiles = tiles_n * -(-m // rows)
    return (kernel(form, epilogue, rows, v.depth, v.groups), {"wg_size": v.a, "cols": v.b},
            tiles_n, tiles, tiles)


async def record(ctx, op, v: Variant, bindings, m: int, n: int, k: int, has_bias: bool,
                 half: bool = False, epilogue: str = "", n0: int = 0, n1: int = 0) -> None:
    """Record one product of variant ``v``: ``bindings`` maps 0 input [M, K], 1 weight
    [N, K], 2 out [M, N], 4 bias [N] (anything when ``has_bias`` is False), and what the
    epilogue binds (5, 6), to value ids or buffers. Also used by bench/."""
    v = v.for_dtype(half)
    shader, constants, tiles_n, tiles, groups = _shape(ctx, v, m, n, epilogue)
    entry = {"dot": "dot", "tiled": "main", "mm": "main"}.get(v.kind, v.entry)
    pipeline = await ctx.pipeline(shader, constants, entry, half)
    params = PARAMS.pack(m=m, n=n, k=k, has_bias=int(has_bias), tiles_n=tiles_n, tiles=tiles,
                         n0=n0, n1=n1)
    uniform = ctx.uniform(params, f"{op.name} params")
    ctx.dispatch(op, pipeline, list(bindings) + [(3, uniform)], ctx.grid(groups))


def linear_dims(in_shape, w_shape, out_shape, name: str) -> tuple[int, int, int]:
    """(M, N, K) of a linear; FormatError when the shapes disagree."""
    if not in_shape or len(w_shape) != 2:
        raise FormatError(f"{name}: input {list(in_shape)} and weight {list(w_shape)} must "
                          "be [..., K] and [N, K]")
    (n, k), lead = w_shape, tuple(in_shape[:-1])
    if in_shape[-1] != k or tuple(out_shape) != lead + (n,):
        raise FormatError(f"{name}: input {list(in_shape)}, weight {list(w_shape)} and "
                          f"output {list(out_shape)} do not match (out = [..., N])")
    return prod(lead), n, k


def _bias(ctx, op, b_id: int, n: int) -> bool:
    """Whether the op has a bias (then checked to hold N values)."""
    if isinstance(ctx.graph.values[b_id], Null):
        return False
    b = ctx.float_tensor(b_id, op)
    if b.numel != n:
        raise FormatError(f"{op.name}: bias shape {list(b.shape)}, expected [{n}]",
                          field=ctx.where(op))
    return True


async def build_linear(ctx, op):
    x_id, w_id, b_id, out_id = ctx.args(op, 4)
    x, w, out = (ctx.float_tensor(i, op) for i in (x_id, w_id, out_id))
    m, n, k = linear_dims(x.shape, w.shape, out.shape, op.name)
    has_bias = _bias(ctx, op, b_id, n)
    bindings = [(0, x_id), (1, w_id), (2, out_id), (4, b_id if has_bias else w_id)]
    await _product(ctx, op, bindings, m, n, k, has_bias, out_id, n)


async def _product(ctx, op, bindings, m: int, n: int, k: int, has_bias: bool, out_id: int,
                   out_n: int, epilogue: str = "", n0: int = 0, n1: int = 0) -> None:
    """The chosen form of an [M, K] x [N, K] product (and its decode twin); ``out_id``,
    ``out_n`` columns wide, is the output whose actual size the dispatches follow."""
    if m * n == 0:
        return
    adapter = ctx.device.info
    half, extra = ctx.half(out_id), (epilogue, n0, n1)
    v = VARIANTS.pick(ctx, op, lambda: choose(adapter, m, n, k, half),
                      lambda v: fit(v, adapter, k))
    # A dynamic M (one program for prefill and decode): the actual rows' workgroups only,
    # and where fewer rows pick other forms (matrix-vector for decode, ...), each is
    # recorded too and takes the executes of its row range (the others' grids are empty).
    forms = [(m, v)]
    if m > 1 and ctx.dyn is not None and ctx.dyn.is_dynamic(ctx.graph_key, out_id) \
            and VARIANTS.forced(ctx.options) is None:
        forms = _row_forms(adapter, m, n, k, v, half)
    if len(forms) > 1:
        ctx.note_kernel(op, twin=", ".join(f.name for _, f in forms[1:]))

    def rows(elements: int) -> int:
        return -(-elements // out_n)

    for i, (top, form) in enumerate(forms):
        low = forms[i + 1][0] if i + 1 < len(forms) else 0  # the next form's rows are below
        await record(ctx, op, form, bindings, m, n, k, has_bias, half, *extra)
        follow_actual_size(
            ctx, out_id, lambda e, f=form, low=low, top=top:
            _groups(ctx, f, rows(e), n) if low < rows(e) <= top else 0, alternative=i > 0)


def _row_forms(adapter, m: int, n: int, k: int, v: Variant,
               half: bool = False) -> list[tuple[int, Variant]]:
    """(up to how many rows, variant) for a dynamic M: ``v``, the bound's pick, first (it
    serves any row count), then the pick of each smaller row limit that differs."""
    forms = [(m, v)]
    for limit in (GPU_GEMV_ROWS, DECODE_ROWS, 1):
        if limit < m:
            pick = choose(adapter, limit, n, k, half)
            if pick == forms[-1][1]:
                forms[-1] = (forms[-1][0], pick)
            else:
                forms.append((limit, pick))
    return forms


def _groups(ctx, v: Variant, rows: int, n: int) -> int:
    """Workgroups of variant ``v`` covering the first ``rows`` rows of an [M, n] output."""
    return _shape(ctx, v, rows, n)[4]


# --- fused (runtime/fusion.py rewrites a graph to use it) -----------------------------
FUSED = "pte_webgpu.fused_linear"
MAX_SPLIT = 3  # outputs of one fused linear: bindings 2, 5, 6


def fused_outputs(values, outs_id: int) -> tuple:
    outs = values[outs_id]
    return outs.items if getattr(outs, "kind", "") == "value_list" else ()


async def build_fused(ctx, op):
    """``[x, weight, bias|Null, residual|Null, outs]``: one product against ``weight``
    [N, K], the weights of linears that read ``x`` stacked at load; output column ranges
    go to ``outs`` in order (each ``[..., N_i]``). With a residual (one output):
    ``out = residual + linear`` (an add.Tensor folded into the epilogue)."""
    x_id, w_id, b_id, r_id, outs_id = ctx.args(op, 5)
    outs = fused_outputs(ctx.graph.values, outs_id)
    residual = not isinstance(ctx.graph.values[r_id], Null)
    if not 1 <= len(outs) <= MAX_SPLIT or (residual and len(outs) != 1):
        raise FormatError(f"{op.name}: 1 to {MAX_SPLIT} outputs (1 with a residual), found "
                          f"{len(outs)}", field=ctx.where(op))
    x, w = ctx.float_tensor(x_id, op), ctx.float_tensor(w_id, op)
    widths = [ctx.float_tensor(o, op).shape[-1] if ctx.tensor(o, op).shape else 0
              for o in outs]
    if residual:
        out, r = ctx.float_tensor(outs[0], op), ctx.float_tensor(r_id, op)
        lead = tuple(x.shape[:-1])
        if tuple(r.shape) != tuple(out.shape) or out.numel != prod(lead) * w.shape[0]:
            raise FormatError(f"{op.name}: residual {list(r.shape)} and output "
                              f"{list(out.shape)} should hold input rows x N", field=ctx.where(op))
        m, n, k = linear_dims(x.shape, w.shape, lead + (w.shape[0],), op.name)
    else:
        for o, width in zip(outs, widths):
            linear_dims(x.shape, (width, x.shape[-1] if x.shape else 0),
                        ctx.tensor(o, op).shape, op.name)
        m, n, k = linear_dims(x.shape, w.shape, tuple(x.shape[:-1]) + (sum(widths),), op.name)
    has_bias = _bias(ctx, op, b_id, n)
    bindings = [(0, x_id), (1, w_id), (2, outs[0]), (4, b_id if has_bias else w_id)]
    epilogue = "residual" if residual else ("", "", "split2", "split3")[len(outs)]
    bindings += [(5, r_id)] if residual else [(5 + i, o) for i, o in enumerate(outs[1:])]
    n0 = widths[0] if len(outs) > 1 else 0
    n1 = n0 + widths[1] if len(outs) > 2 else 0
    ctx.note_kernel(op, fused="linear + residual add" if residual else f"{len(outs)} linears")
    await _product(ctx, op, bindings, m, n, k, has_bias, outs[0], widths[0], epilogue, n0, n1)


def reference_fused(read, values, args):
    x_id, w_id, b_id, r_id, outs_id = args
    whole = reference(read, values, (x_id, w_id, b_id, None))
    outs = fused_outputs(values, outs_id)
    if not isinstance(values[r_id], Null):
        return [[r + v for r, v in zip(read(r_id).values, whole)]]
    n = values[w_id].shape[0]
    parts, start = [], 0
    for o in outs:
        width = values[o].shape[-1]
        parts.append([v for i, v in enumerate(whole) if start <= i % n < start + width])
        start += width
    return parts


def sizes_fused(op, shape, integer, values):
    x_id, _, _, r_id, outs_id = op.args
    if not isinstance(values[r_id], Null):
        return {fused_outputs(values, outs_id)[0]: shape(r_id)}
    lead = tuple(shape(x_id)[:-1])
    return {o: lead + (values[o].shape[-1],) for o in fused_outputs(values, outs_id)}


def choices(graph, op) -> dict[str, str]:
    """The variant each typical adapter would run for this op (shown by inspect)."""
    if len(op.args) != 4:
        return {}
    x, w = graph.values[op.args[0]], graph.values[op.args[1]]
    if not (isinstance(x, TensorValue) and isinstance(w, TensorValue) and x.shape
            and len(w.shape) == 2):
        return {}  # malformed op: inspect shows it, the build refuses it
    m, (n, k) = prod(x.shape[:-1]), w.shape
    if not m * n * k:
        return {}
    return {name: choose(a, m, n, k).name for name, a in TYPICAL_ADAPTERS.items()}


def reference(read, values, args):
    x, w = read(args[0]), read(args[1])
    bias = None if isinstance(values[args[2]], Null) else read(args[2]).values
    if not x.shape or len(w.shape) != 2 or x.shape[-1] != w.shape[1]:
        raise FormatError(f"linear: input {list(x.shape)} and weight {list(w.shape)} must be "
                          "[..., K] and [N, K]")
    n, k = w.shape
    rows = [w.values[j * k:(j + 1) * k] for j in range(n)]
    out = []
    for start in range(0, len(x.values), k):
        xs = x.values[start:start + k]
        out += [math.fsum(map(operator.mul, xs, row)) + (bias[j] if bias else 0.0)
                for j, row in enumerate(rows)]
    return out


define("aten.linear.default", build_linear, reference, 4, half=True, choices=choices,
       sizes=sizes.linear)
define(FUSED, build_fused, reference_fused, 5, half=True, sizes=sizes_fused)
