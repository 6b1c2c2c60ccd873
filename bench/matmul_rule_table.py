"""Re-reads a ``bench --op linear`` JSON from the H200 and marks, as "chosen", the variant
today's selection rule picks (its time from the same run), then writes the table and the
plot of docs/performance.md. The run's own "chosen" rows used the rule before it was
tuned on that run's numbers.

    python bench/matmul_rule_table.py [IN.json] [OUT.json] [PLOT.png]
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import matmul_bench  # noqa: E402
from pte_webgpu.gpu.interface import AdapterInfo  # noqa: E402
from pte_webgpu.ops import matmul_choice  # noqa: E402

# The H200's adapter as wgpu-native reports what the rule reads (subgroups, limits).
H200 = AdapterInfo("native", "nvidia", "", "NVIDIA H200", False,
                   frozenset({"subgroup", "shader-f16", "timestamp-query"}),
                   {"maxComputeInvocationsPerWorkgroup": 1024, "maxComputeWorkgroupSizeX": 1024,
                    "maxComputeWorkgroupStorageSize": 49152})


def main(src="docs/bench/linear_h200.json", dst="build/bench/linear_h200_rule.json",
         png="docs/images/linear_h200.png") -> None:
    recs = [r for r in json.loads(Path(src).read_text()) if not r["variant"].startswith("chosen")]
    for r in list(recs):
        m, k, n = r["shape"]
        half = r["dtype"] == "float16"
        pick = matmul_choice.choose(H200, m, n, k, half).for_k(k).for_dtype(half)
        if r["impl"] == "ours" and pick.name == r["variant"]:
            recs.append(dict(r, variant="chosen " + r["variant"]))
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    Path(dst).write_text(json.dumps(recs, indent=1))
    print(matmul_bench.markdown(recs))
    matmul_bench.plot(recs, png)


if __name__ == "__main__":
    main(*sys.argv[1:])
