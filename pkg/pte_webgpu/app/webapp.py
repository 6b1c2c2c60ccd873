"""What the demo page (web/index.html) calls inside Pyodide: describe a program, run it.

All parsing and GPU work happens here; the page's JavaScript only moves bytes in
and renders the returned dicts. ``describe_file`` and ``run`` raise PteError;
the ``page_*`` wrappers turn any exception into ``{"ok": False, "error": ...}``
so the page can show it in plain words instead of an uncaught exception.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import struct
import time
import traceback

from .. import formats
from ..errors import DeviceLostError, InputError, PteError
from ..formats import npy
from ..model import dtypes
from ..model.graph import TensorValue
from ..model.plan_graph import kernel_op, linear_chain, plan_as_graph
from ..model.program_file import DelegateCall, KernelCall
from ..ops import registry
from ..reference import interpreter as reference
from ..runtime import Runtime, Tensor
from . import describe, image_model
from . import npz_inputs as inputs_rule

FIRST_VALUES = 8
MAX_REPEAT = 1000

_runtime: Runtime | None = None
_runtime_lock = asyncio.Lock()


async def get_runtime() -> Runtime:
    """The page's one Runtime (one WebGPU device), created on first use."""
    global _runtime
    async with _runtime_lock:
        if _runtime is None:
            _runtime = await Runtime.create()
        return _runtime


async def adapter_info() -> dict:
    rt = await get_runtime()
    info = rt.adapter
    return {"summary": info.summary(), "is_fallback": info.is_fallback,
            "features": sorted(info.features)}


# --- describe ----------------------------------------------------------------------

async def describe_file(pte_bytes, data_files=(), file_name: str = "") -> dict:
    """The graph summary the page shows: per method, its steps, ops with argument
    shapes, constants and where they resolve, and whether this runtime can run it."""
    pte = _as_bytes(pte_bytes)
    program = formats.open_program(pte, _data_files(data_files))
    report = describe.describe(program, file_name, len(pte))
    gpu_ops, cpu_ops = set(registry.supported_ops()), set(reference.supported_ops())
    methods = [_method_summary(p, gpu_ops, cpu_ops) for p in report["plans"]]
    unresolved = [c for m in methods for s in m["steps"] for c in s.get("constants", ())
                  if c.get("error")]
    return {"file": report["file"], "data_files": report["data_files"],
            "supported_ops": sorted(gpu_ops), "methods": methods,
            "runnable": all(m["runnable"] for m in methods),
            "unsupported_ops": sorted({op for m in methods for op in m["unsupported_ops"]}),
            # Run stays disabled until these resolve: named keys no given file holds.
            "unresolved_constants": [{"index": c["index"], "stored": c["stored"],
                                      "error": c["error"]} for c in unresolved]}


def _method_summary(plan: dict, gpu_ops: set, cpu_ops: set) -> dict:
    values = plan["values"]
    problems, steps = [], []
    for ins in plan["instructions"]:
        if ins["kind"] == "delegate":
            steps.append(_delegate_step(plan["delegates"][ins["delegate_index"]], ins,
                                        gpu_ops, cpu_ops, problems))
        elif ins["kind"] == "kernel":
            supported = _runs_on_gpu(ins, ins["op"], gpu_ops)
            if not supported:
                problems.append(f"instruction {ins['index']}: non-delegated {ins['op']} "
                                "is not supported")
            steps.append({"kind": "kernel", "index": ins["index"], "op": ins["op"],
                          "supported": supported})
        else:  # move / free / jump_false: bookkeeping the runtime handles itself
            steps.append({"kind": ins["kind"], "index": ins["index"], "op": ins["kind"],
                          "supported": True})
    io = {role: [{"id": v, "shape": values[v].get("shape"), "dtype": values[v].get("dtype")}
                 for v in plan[role]] for role in ("inputs", "outputs")}
    unsupported = sorted({op["name"] for s in steps for op in s.get("ops", ())
                          if not op["supported"]}
                         | {s["op"] for s in steps if not s.get("supported", True)})
    return {"name": plan["name"], **io, "steps": steps, "problems": problems,
            "runnable": not problems, "unsupported_ops": unsupported,
            "image_input": image_model.image_input([(t["shape"], t["dtype"])
                                                    for t in io["inputs"]])}


def _runs_on_gpu(entry: dict, op_name: str, gpu_ops: set) -> bool:
    # inspect says where each op runs; older reports lack it: ask the registry.
    return entry["runs_on"] == "gpu" if "runs_on" in entry else op_name in gpu_ops


def _delegate_step(d: dict, ins: dict, gpu_ops: set, cpu_ops: set, problems: list) -> dict:
    step = {"kind": "delegate", "index": ins["index"], "delegate": d["index"],
            "backend": d["id"], "ops": [], "constants": []}
    vk = d.get("vulkan")
    if vk is None:
        problems.append(f"delegate {d['index']} uses backend {d['id']!r}; only "
                        f"{formats.VULKAN_BACKEND_ID} runs here")
        return step
    values = vk["values"]
    for op in vk["ops"]:
        supported = _runs_on_gpu(op, op["name"], gpu_ops)
        if not supported:
            problems.append(f"op {op['name']} (delegate {d['index']} op {op['index']}) "
                            "is not supported")
        args = [_arg_text(values[a["id"]]) for a in op["args"]]
        step["ops"].append({"index": op["index"], "name": op["name"], "supported": supported,
                            "has_reference": op["name"] in cpu_ops, "args": args})
    for c in vk["constants"]:
        users = [v for v in values if v["kind"] == "tensor" and v["constant_id"] == c["index"]]
        step["constants"].append({
            "index": c["index"], "value_ids": [v["id"] for v in users],
            "shape": users[0]["shape"] if users else None,
            "dtype": users[0]["dtype"] if users else None, "bytes": c["length"],
            "stored": "inline" if c["source"] == "inline" else f"named {c['named_key']!r}",
            "resolves_to": c.get("resolves_to"), "error": c.get("error"),
            "first_values": c.get("first_values", [])})
        if c.get("error"):
            problems.append(f"constant {c['index']}: {c['error']}")
    step["dataflow"] = dataflow(vk, {op["index"]: op["supported"] for op in step["ops"]})
    return step


def dataflow(vk: dict, supported: dict) -> dict:
    """A delegate graph as nodes (one per op, one per graph input and output) and edges
    (one per tensor from the op that writes it to each op that reads it), with a layer
    per node for drawing top-down. An op writes the non-constant tensors it is the first
    to name (graph inputs excepted): ExecuTorch lists ops in execution order."""
    values = vk["values"]

    def tensors(arg_id: int) -> list[int]:
        v = values[arg_id]
        if v["kind"] == "value_list":
            return [i for i in v["items"] if values[i]["kind"] == "tensor"]
        return [arg_id] if v["kind"] == "tensor" else []

    def is_constant(vid: int) -> bool:
        return values[vid].get("constant_id", -1) >= 0

    nodes = [{"id": f"in{i}", "kind": "input", "label": f"input %{vid}", "layer": 0}
             for i, vid in enumerate(vk["input_ids"])]
    writer = {vid: f"in{i}" for i, vid in enumerate(vk["input_ids"])}
    edges, layer = [], {n["id"]: 0 for n in nodes}
    for op in vk["ops"]:
        node = f"op{op['index']}"
        reads = []
        for vid in (t for a in op["args"] for t in tensors(a["id"])):
            if is_constant(vid):
                continue
            if vid in writer and writer[vid] != node:
                reads.append(vid)
            else:
                writer.setdefault(vid, node)
        layer[node] = 1 + max((layer[writer[v]] for v in reads), default=0)
        short = op["name"].removeprefix("aten.").removeprefix("et_vk.").removesuffix(".default")
        nodes.append({"id": node, "kind": "op", "label": short, "op": op["name"],
                      "layer": layer[node], "supported": supported.get(op["index"], True),
                      "constants": sum(is_constant(t) for a in op["args"] for t in tensors(a["id"]))})
        edges += [{"from": writer[v], "to": node, "value": v, "text": _tensor_text(values[v])}
                  for v in dict.fromkeys(reads)]
    bottom = 1 + max(layer.values(), default=0)
    for i, vid in enumerate(vk["output_ids"]):
        nodes.append({"id": f"out{i}", "kind": "output", "label": f"output %{vid}", "layer": bottom})
        if vid in writer:
            edges.append({"from": writer[vid], "to": f"out{i}", "value": vid,
                          "text": _tensor_text(values[vid])})
    return {"nodes": nodes, "edges": edges}


def _tensor_text(v: dict) -> str:
    return f"{v['dtype']}{v['shape']}"


def _arg_text(v: dict) -> str:
    kind = v["kind"]
    if kind == "tensor":
        const = f" const#{v['constant_id']}" if v.get("constant_id", -1) >= 0 else ""
        return f"%{v['id']} {v['dtype']}{v['shape']}{const}"
    if kind == "null":
        return f"%{v['id']} None"
    if "value" in v:
        return f"%{v['id']} {kind} {v['value']!r}"
    return f"%{v['id']} {kind} {list(v.get('items', []))}"


# --- run ---------------------------------------------------------------------------

async def run(pte_bytes, data_files=(), inputs: dict | None = None, repeat: int = 1,
              seed: int = 0, method_name: str = "forward", profile: bool = False,
              cast: bool = False, on_progress=None, should_stop=None,
              check_reference: bool = True) -> dict:
    """Load and execute on the GPU, check against the CPU reference, time it.

    ``inputs``: {name: Tensor} (e.g. from an .npz; ``in0``, ``in1``... or in order)
    or None for seeded random inputs. Members named ``out0``... are taken as
    expected outputs and compared too. A method that takes a picture
    (image_model.image_input) gets each output's ``view`` (image_model.output_view).
    With ``profile``, one more execute after
    the timed runs measures each op: ``profile`` rows (method.last_profile) and
    ``timestamps`` (GPU timestamp queries, else wall time per dispatch).
    ``on_progress(done, total)`` hears of each execution; ``should_stop()`` is asked
    before each one after the first, and a True ends the runs early (``cancelled``).
    Without ``check_reference`` the pure-Python CPU reference (minutes for a real vision
    model in Pyodide) is skipped.
    """
    global _runtime
    pte, files = _as_bytes(pte_bytes), _data_files(data_files)
    repeat = max(1, min(int(repeat), MAX_REPEAT))
    rt = await get_runtime()
    started = time.perf_counter()
    program = await rt.load_program(pte, files)
    try:
        method = program.load_method(method_name)
        load_seconds = time.perf_counter() - started
        tensors, names, source = choose_inputs(method.input_specs(), inputs, seed,
                                               index_limits(program.file.plan(method_name)), cast)
        times, outputs, cancelled = [], [], False
        for i in range(repeat):
            if i and should_stop is not None and should_stop():
                cancelled = True
                break
            t = time.perf_counter()
            outputs = await method.execute(tensors, as_numpy=False)
            times.append(time.perf_counter() - t)
            if on_progress is not None:
                on_progress(i + 1, repeat)
        if profile and not cancelled:  # after the timed runs: those stay free of its overhead
            await method.execute(tensors, as_numpy=False, profile=True)
    except DeviceLostError:
        _runtime = None  # a lost device cannot be reused: the next run makes a new one
        raise
    finally:
        program.close()  # also drops it from the runtime
    ref, ref_error = None, 'skipped ("CPU reference" unticked)'
    try:
        if check_reference:
            ref, ref_error = reference.run_program(program.file, tensors, method_name), None
    except PteError as e:
        ref, ref_error = None, f"{type(e).__name__}: {e}"
    expected = [inputs.get(f"out{i}") for i in range(len(outputs))] if inputs else []
    image = image_model.image_input(method.input_specs())
    rows = [_output_row(i, out, ref[i] if ref else None,
                        expected[i] if i < len(expected) else None, view=image is not None)
            for i, out in enumerate(outputs)]
    return {
        "adapter": rt.adapter.summary(),
        "method": method_name,
        "inputs": [{"name": n, "shape": list(t.shape), "dtype": t.dtype.name}
                   for n, t in zip(names, tensors)],
        "input_source": source,
        "image_input": image,
        "load_ms": load_seconds * 1e3,
        "execute_ms": {"first": times[0] * 1e3,
                       "median": statistics.median(times[1:] or times) * 1e3,
                       "runs": len(times), "requested": repeat},
        "cancelled": cancelled,
        "outputs": rows,
        "reference_error": ref_error,
        "max_abs_error": _max(r["max_abs_error"] for r in rows),
        "max_rel_error": _max(r["max_rel_error"] for r in rows),
        "expected_max_abs_error": _max(r.get("expected_max_abs_error") for r in rows),
        "profile": method.last_profile if profile else None,
        "timestamps": "timestamp-query" in rt.adapter.features,
    }


SMALL_INTS = 10  # random integer inputs that no embedding bounds: 0..9


def random_inputs(specs, seed: int = 0, int_limits=None) -> list[Tensor]:
    """Seeded inputs for ``method.input_specs()``, the same for the same seed: standard
    normal floats; integers uniform in ``[0, int_limits[i])`` (e.g. an embedding's
    vocabulary, see ``index_limits``), else in ``[0, SMALL_INTS)``."""
    rng = random.Random(seed)
    out = []
    for i, (shape, dtype_name) in enumerate(specs):
        dtype = dtypes.BY_NAME[dtype_name]
        n = dtypes.numel(shape)
        if dtype_name in reference.INT_DTYPES:
            limit = (int_limits[i] if int_limits and int_limits[i] is not None
                     else SMALL_INTS)
            values = [rng.randrange(limit) if limit > 0 else 0 for _ in range(n)]
        else:
            values = reference.round_to([rng.gauss(0.0, 1.0) for _ in range(n)], dtype)
        out.append(Tensor(struct.pack(f"<{n}{dtype.struct_code}", *values), shape, dtype))
    return out


def index_limits(plan) -> list[int | None]:
    """Per plan input: the smallest vocabulary of an ``aten.embedding`` that reads it as
    its indices directly (in a Vulkan delegate or as a kernel), else None."""
    limits: dict[int, int | None] = dict.fromkeys(plan.inputs)

    def see(graph, op, to_plan: dict) -> None:
        if op.name != "aten.embedding.default" or len(op.args) != 6:
            return
        weight, pid = graph.values[op.args[0]], to_plan.get(op.args[1])
        if pid in limits and isinstance(weight, TensorValue) and len(weight.shape) == 2:
            vocab = weight.shape[0]
            limits[pid] = vocab if limits[pid] is None else min(limits[pid], vocab)

    for _, ins in linear_chain(plan):
        if isinstance(ins, DelegateCall):
            vk = plan.delegates[ins.delegate_index].graph
            if vk is not None:
                to_plan = dict(zip(vk.graph.input_ids, ins.args))
                for op in vk.graph.ops:
                    see(vk.graph, op, to_plan)
        elif isinstance(ins, KernelCall):
            graph = plan_as_graph(plan)
            see(graph, kernel_op(plan, ins), {v: v for v in plan.inputs})
    return [limits[v] for v in plan.inputs]


def choose_inputs(specs, inputs: dict | None, seed: int, int_limits=None, cast: bool = False):
    """(tensors, names, description): uploaded arrays matched to the method's inputs by
    the rule the CLI uses too (inputs.py), or seeded random ones when none were given."""
    if not inputs:
        ints = any(d in reference.INT_DTYPES for _, d in specs)
        return random_inputs(specs, seed, int_limits), [f"in{i}" for i in range(len(specs))], \
            f"random normal, seed {seed}" + (
                f"; integers uniform in [0, vocabulary) or [0, {SMALL_INTS})" if ints else "")
    tensors, names = inputs_rule.match_inputs(specs, inputs, cast=cast, source="the uploaded file",
                                              cast_hint='"cast inputs"')
    return tensors, names, "uploaded file"


def read_inputs_file(name: str, data) -> dict:
    """Arrays of an uploaded ``.npz`` (by member name) or ``.npy`` (one array)."""
    data = _as_bytes(data)
    if name.lower().endswith(".npz"):
        return npy.read_npz(data, name)
    return {name.rsplit("/", 1)[-1].rsplit(".", 1)[0]: npy.read_npy(data, name)}


def _output_row(index: int, out: Tensor, ref: Tensor | None, expected: Tensor | None,
                view: bool = False) -> dict:
    got = reference.from_tensor(out).values
    row = {"index": index, "shape": list(out.shape), "dtype": out.dtype.name,
           "first_values": got[:FIRST_VALUES], "max_abs_error": None, "max_rel_error": None}
    if view:
        row["view"] = image_model.output_view(row["shape"], got)
    if ref is not None:
        row["max_abs_error"], row["max_rel_error"] = compare(got, reference.from_tensor(ref).values)
    if expected is not None and tuple(expected.shape) == tuple(out.shape):
        row["expected_max_abs_error"] = compare(got, reference.from_tensor(expected).values)[0]
    return row


def compare(got: list, want: list) -> tuple[float, float]:
    """(max |got - want|, that divided by max |want|): error relative to the output's scale."""
    if not want:
        return 0.0, 0.0
    diff = max(abs(g - w) if g == g else float("inf") for g, w in zip(got, want))
    scale = max(abs(w) for w in want)
    return diff, diff / scale if scale else diff


def _max(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


# --- page entry points ----------------------------------------------------------------

async def page_adapter() -> dict:
    return await _for_page(adapter_info)


async def page_describe(pte_bytes, data_files, file_name="") -> dict:
    return await _for_page(describe_file, pte_bytes, data_files, _absent_to_none(file_name) or "")


async def page_run(pte_bytes, data_files, inputs_file=None, repeat=1, seed=0,
                   profile=False, cast=False, picture=None, check_reference=True,
                   on_progress=None, should_stop=None) -> dict:
    """``inputs_file``: (name, bytes) of an .npy/.npz; ``picture``: (description, shape,
    float32 NCHW bytes) from web/image.js, cast to the method's float dtype."""
    async def go():
        pair, shot = _absent_to_none(inputs_file), _absent_to_none(picture)
        inputs = read_inputs_file(str(pair[0]), pair[1]) if pair is not None else None
        if shot is not None:
            inputs = {"in0": image_model.picture_tensor(shot[1], _as_bytes(shot[2]))}
        result = await run(pte_bytes, data_files, inputs, int(repeat), int(seed),
                           profile=bool(profile), cast=bool(cast) or shot is not None,
                           on_progress=_absent_to_none(on_progress),
                           should_stop=_absent_to_none(should_stop),
                           check_reference=bool(check_reference))
        if shot is not None:
            result["input_source"] = f"picture {shot[0]}"
        elif inputs:
            result["input_source"] = f"file {pair[0]}"
        return result
    return await _for_page(go)


async def _for_page(fn, *args) -> dict:
    try:
        return {"ok": True, "result": await fn(*args)}
    except PteError as e:
        return {"ok": False, "error": _error(e, plain=True)}
    except Exception as e:  # a bug, not bad input: still shown on the page, labelled as such
        return {"ok": False, "error": _error(e, plain=False)}


def _error(e: BaseException, plain: bool) -> dict:
    message = str(e) if plain else f"internal error ({type(e).__name__}: {e})"
    return {"type": type(e).__name__, "message": message,
            "traceback": "".join(traceback.format_exception(e))}


# --- bytes from Python or JavaScript ------------------------------------------------------

def _absent_to_none(value):
    """JS null/undefined arrive as None or pyodide's JsNull."""
    return None if value is None or type(value).__name__ == "JsNull" else value


def _as_bytes(data) -> bytes | memoryview:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return data
    if type(data).__name__.startswith("Js") and hasattr(data, "to_bytes"):  # Uint8Array proxy
        from ..gpu.wasm_heap import wasm_heap  # Pyodide's to_bytes fails past 2 GiB of heap

        return wasm_heap().to_python(data)
    raise InputError(f"expected file bytes, got {type(data).__name__}")


def _data_files(files) -> list[tuple[str, bytes]]:
    """``[(name, bytes), ...]``; from JS, an array of ``[name, Uint8Array]`` pairs."""
    files = _absent_to_none(files)
    return [] if files is None else [(str(f[0]), _as_bytes(f[1])) for f in files]
