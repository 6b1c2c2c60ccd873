"""The fixture programs the tests run: shared ones plus our own exports (fixtures/extra)."""

import json
from pathlib import Path

from pte_webgpu.model.plan_graph import kernel_op_name
from pte_webgpu.ops.registry import supported_ops

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INDEX = json.loads((FIXTURES / "index.json").read_text()) + [
    dict(e, name="extra/" + e["name"])
    for e in json.loads((FIXTURES / "extra" / "index.json").read_text())]


def meta(entry) -> dict:
    return json.loads((FIXTURES / f"{entry['name']}.json").read_text())


def needed_ops(entry) -> set[str]:
    """Delegate ops plus non-delegated kernels, named as the op registry names them."""
    ops = {op for delegate in entry["vk_ops"] for op in delegate}
    for kernel in entry["non_delegated_ops"]:
        name, overload = kernel.split(".", 1) if "." in kernel else (kernel, "out")
        ops.add(kernel_op_name(name, overload))
    return ops


def runnable(entry) -> bool:
    return needed_ops(entry) <= set(supported_ops())


def tolerance(entry) -> float:
    """fp32 programs: 1e-5; programs with float16 tensors anywhere: 1e-2."""
    m = meta(entry)
    fp16 = "fp16" in entry["name"] or any(t["dtype"] == "float16"
                                          for t in m["inputs"] + m["outputs"])
    return 1e-2 if fp16 else 1e-5
