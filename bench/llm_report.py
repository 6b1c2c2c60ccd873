"""``bench --llm`` records as a markdown table (tok/s by context, one row per impl and
phase), a per-op profile table of one decode step, and a plot.

    python bench/llm_report.py A.json B.json ... [--plot F.png] [--markdown F.md]
        merges runs (a later file's record replaces an earlier one's for the same impl,
        phase and context), e.g. ours at 1024 from a run without the slow references
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

IMPL_ORDER = ("ours", "ort-web", "transformers.js", "torch-cuda", "torch-cuda-graph",
              "torch-compile-graph")


def _rows(records):
    keys = sorted({(r["impl"], r["phase"]) for r in records},
                  key=lambda k: (IMPL_ORDER.index(k[0]) if k[0] in IMPL_ORDER else 9, k[1] != "prefill"))
    contexts = sorted({r["context"] for r in records})
    return keys, contexts


def markdown(records: list[dict], profiles: dict | None = None, timestamps: bool = True,
             web_profiles: dict | None = None) -> str:
    if not records:
        return "(no records)"
    keys, contexts = _rows(records)
    by = {(r["impl"], r["phase"], r["context"]): r for r in records}
    first = records[0]
    lines = [f"**{first['backend']}** — {first['adapter']}", "",
             "| impl | phase | " + " | ".join(f"ctx {c} tok/s (ms/token)" for c in contexts) + " |",
             "|---|---|" + "---|" * len(contexts)]
    for impl, phase in keys:
        cells = []
        for c in contexts:
            r = by.get((impl, phase, c))
            mark = "*" if r and r.get("cache") == "seeded" else ""
            cells.append(f"{r['tok_s']:.3g} ({r['ms_per_token']:.3g}){mark}" if r else "-")
        lines.append(f"| {impl} | {phase} | " + " | ".join(cells) + " |")
    lines.append("")
    notes = []
    for c in contexts:
        r = by.get(("ours", "prefill", c)) or next(
            (x for x in records if x["context"] == c and x["phase"] == "prefill"), None)
        d = next((x for x in records if x["context"] == c and x["phase"] == "decode"), None)
        if r and d:
            notes.append(f"ctx {c}: prefill {r['tokens']} tokens, decode {d.get('steps', len(d['ms']))} "
                         f"steps at positions {d['positions'][0]}..{d['positions'][1]}")
    lines += ["; ".join(notes) + ".", ""]
    if any(r.get("cache") == "seeded" for r in records):
        lines += ["\\* decode from a KV cache of as many rows of zeros, at the same positions, "
                  "without a prefill (--peer-prefill-max: too long a prompt for that impl "
                  "here).", ""]
    lines += cost_table(records)
    for c, rows in (profiles or {}).items():
        clock = "GPU timestamps" if timestamps else "wall time per dispatch: no timestamp-query"
        lines += profile_table(rows, f"one decode step of ours at context {c} ({clock})") + [""]
    for key, rows in (web_profiles or {}).items():
        impl, c = key.rsplit(" ", 1)
        lines += profile_table(rows, f"one decode step of {impl} at context {c} (JSEP's "
                               "profiler, GPU timestamps per kernel)") + [""]
    return "\n".join(lines)


def cost_table(records: list[dict]) -> list[str]:
    """Where ours' decode step goes, by context (the records' ``cost``: llm/step_cost.py)."""
    rows = sorted((r for r in records if r.get("impl", "ours") == "ours"
                   and r["phase"] == "decode" and r.get("cost")), key=lambda r: r["context"])
    if not rows:
        return []

    def us(v):
        return "-" if v is None else f"{v:.0f}"
    lines = ["Where a decode step of ours goes (µs): the chained step as timed; the GPU's time "
             "for its dispatches back to back, one timed pass per run of dispatches; the host "
             "encoding it (no submit); the host's whole work per step while chained "
             "(execute until it returns: inputs, host steps, encode, submit):", "",
             "| ctx | step | GPU | encode | host | dispatches | passes | GPU per dispatch |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["cost"]
        per = "-" if c["gpu_us"] is None else f"{c['gpu_us'] / max(1, c['dispatches']):.1f}"
        lines.append(f"| {r['context']} | {r['ms_per_token'] * 1e3:.0f} | {us(c['gpu_us'])} | "
                     f"{us(c['encode_us'])} | {us(c.get('host_us'))} | {c['dispatches']} | "
                     f"{c['passes']} | {per} |")
    lines.append("")
    for r in rows:
        if r["cost"].get("by_op"):
            lines += by_op_table(f"Context {r['context']}", r["cost"])
    for r in records:  # --profile: the prefills' own
        if r.get("impl", "ours") == "ours" and r["phase"] == "prefill" and \
                (r.get("cost") or {}).get("by_op"):
            lines += by_op_table(f"Prefill of {r['tokens']} tokens", r["cost"])
    return lines


def by_op_table(title: str, cost: dict) -> list[str]:
    """GPU time by op: a timestamp after each dispatch (step_cost's by_op)."""
    total = cost["in_pass_us"] or 1.0
    lines = [f"{title}, each dispatch timed inside its pass (its barrier with it; "
             f"total {cost['in_pass_us']:.0f} µs):", "",
             "| op | µs | share | dispatches | µs each |", "|---|---|---|---|---|"]
    for op, (us, n) in sorted(cost["by_op"].items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {op} | {us:.0f} | {us / total:.0%} | {n} | {us / max(1, n):.1f} |")
    return lines + [""]


def profile_table(rows: list[dict], title: str, top: int = 12) -> list[str]:
    """Per-op totals of one profiled execute (method.last_profile rows: one per kernel)."""
    us, count = defaultdict(float), defaultdict(int)
    for r in rows:
        us[r["op"]] += r["us"]
        count[r["op"]] += r.get("dispatches", 1)
    total = sum(us.values()) or 1.0
    lines = [f"Per-op GPU time, {title} (total {total / 1e3:.1f} ms):", "",
             "| op | ms | share | dispatches |", "|---|---|---|---|"]
    ranked = sorted((op for op in us if count[op]), key=us.get, reverse=True)
    for op in ranked[:top]:
        lines.append(f"| {op} | {us[op] / 1e3:.2f} | {us[op] / total:.1%} | {count[op]} |")
    rest = ranked[top:]
    if rest:
        lines.append(f"| ({len(rest)} more ops) | {sum(us[o] for o in rest) / 1e3:.2f} | "
                     f"{sum(us[o] for o in rest) / total:.1%} | {sum(count[o] for o in rest)} |")
    return lines


def plot(records: list[dict], path: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return False
    keys, contexts = _rows(records)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for impl, phase in keys:
        pts = sorted((r["context"], r["tok_s"]) for r in records
                     if r["impl"] == impl and r["phase"] == phase)
        line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        linestyle="-" if phase == "decode" else "--", label=f"{impl} {phase}")
        seeded = sorted((r["context"], r["tok_s"]) for r in records if r["impl"] == impl
                        and r["phase"] == phase and r.get("cache") == "seeded")
        if seeded:  # hollow: decode from a zero-filled cache, no prefill
            ax.plot([p[0] for p in seeded], [p[1] for p in seeded], "o", markersize=10,
                    markerfacecolor="white", color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(contexts)
    ax.set_xticklabels([str(c) for c in contexts])
    ax.set_xlabel("context (tokens)")
    ax.set_ylabel("tokens / s")
    title = records[0]["adapter"][:80]
    if any(r.get("cache") == "seeded" for r in records):
        title += "\nhollow: decode from a zero-filled KV cache of that length (no prefill)"
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def merge(paths) -> list[dict]:
    found = {}
    for path in paths:
        for r in json.loads(open(path).read()):
            found[(r["impl"], r["phase"], r["context"])] = r
    return list(found.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--plot")
    ap.add_argument("--markdown")
    args = ap.parse_args(argv)
    records = merge(args.json)
    text = markdown(records)
    print(text)
    if args.markdown:
        open(args.markdown, "w").write(text + "\n")
    if args.plot:
        plot(records, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
