"""How much a quantized export changes a model's predictions: teacher-forced next-token
top-1 agreement between the eager twin of a quantized program and a float64 model of the
GGUF's weights (transformers' Llama, an independent implementation), over TEXTS.

Teacher forced: both models see the same text; at every position each predicts the next
token; the figure is the share of positions where the two argmaxes agree.
"""

from __future__ import annotations

import numpy as np

# Four texts of different kinds (prose, dialogue, code, a list), each longer than 129 tokens.
TEXTS = [
    "The river town woke slowly on market days. Before sunrise the bakers had already lit "
    "their ovens, and the smell of bread drifted over the bridge where fishermen sorted the "
    "night's catch into wooden crates. By seven o'clock the square was full of carts: apples "
    "from the hill farms, cheese wrapped in cloth, bundles of dried herbs, and cages of "
    "complaining chickens. Children ran between the stalls while their parents argued about "
    "prices that had not changed in years. The old clock above the town hall struck the hour "
    "a few minutes late, as it always did, and nobody minded. When the rain came in the "
    "afternoon, the traders covered their goods with canvas and waited under the arches, "
    "sharing news from the villages upstream and complaining about the roads.",
    "User: I want to learn to cook, but I only have a small kitchen and one pan. Where should "
    "I start?\nAssistant: A single good pan is enough for a lot of meals. Start with eggs: "
    "scrambled, fried and folded into an omelette. They teach you how heat works, because "
    "they change quickly and show every mistake. Next, try a simple tomato sauce with garlic "
    "and olive oil, which you can serve with pasta or rice. Then learn to cook vegetables so "
    "they stay bright and a little crisp. Keep a notebook of what you tried, how long it "
    "took and what you would change. After a few weeks you will have a small set of dishes "
    "you can make without a recipe.\nUser: That sounds good. What should I buy first?",
    "def merge_sorted(left, right):\n    \"\"\"Merge two sorted lists into one sorted list.\"\"\"\n"
    "    result = []\n    i = j = 0\n    while i < len(left) and j < len(right):\n"
    "        if left[i] <= right[j]:\n            result.append(left[i])\n            i += 1\n"
    "        else:\n            result.append(right[j])\n            j += 1\n"
    "    result.extend(left[i:])\n    result.extend(right[j:])\n    return result\n\n\n"
    "def merge_sort(values):\n    if len(values) <= 1:\n        return list(values)\n"
    "    middle = len(values) // 2\n    return merge_sorted(merge_sort(values[:middle]), "
    "merge_sort(values[middle:]))\n\n\nif __name__ == \"__main__\":\n"
    "    print(merge_sort([5, 3, 9, 1, 4, 8, 2, 7, 6]))\n",
    "Packing list for a week of hiking in the mountains:\n1. A waterproof jacket and trousers, "
    "because the weather changes fast above the tree line.\n2. Two pairs of wool socks per "
    "day of walking, and one dry pair kept for the evening.\n3. A map of the area, a compass "
    "and a fully charged phone with the route saved offline.\n4. A small first aid kit with "
    "plasters, bandages, pain relief and blister dressings.\n5. Enough food for every day, "
    "plus one extra day in case a storm keeps you in the hut.\n6. A headlamp with spare "
    "batteries.\n7. Sun cream, sunglasses and a hat, even if the forecast is cloudy.\n8. A "
    "light sleeping bag liner for the huts.",
]
POSITIONS_PER_TEXT = 128


def text_ids(tokenizer, text: str) -> list[int]:
    ids = tokenizer.encode(text, add_special=False)
    if len(ids) < POSITIONS_PER_TEXT + 1:
        raise ValueError(f"text of {len(ids)} tokens is shorter than {POSITIONS_PER_TEXT + 1}")
    return ids[:POSITIONS_PER_TEXT + 1]


def eager_all_logits(model, ids: list[int]) -> np.ndarray:
    """[len(ids), vocab] logits of the llama example model, one prefill with full logits."""
    import torch

    for name, buf in model.named_buffers():
        if name.endswith(("k_cache", "v_cache")):
            buf.zero_()
    keep = model.generate_full_logits
    model.generate_full_logits = True  # the forward keeps every position instead of the last
    try:
        with torch.no_grad():
            out = model(torch.tensor([ids], dtype=torch.long), {"input_pos": torch.tensor([0])})
    finally:
        model.generate_full_logits = keep
    logits = out[0] if isinstance(out, tuple) else out
    return logits.reshape(len(ids), -1).double().numpy()


def top1_agreement(quantized, reference, tokenizer) -> dict:
    """Teacher-forced top-1 agreement of ``quantized`` (llama example model) with
    ``reference`` (a transformers causal LM) over TEXTS."""
    import torch

    per_text = []
    for text in TEXTS:
        ids = text_ids(tokenizer, text)[:POSITIONS_PER_TEXT]  # predict tokens 1..128
        ours = eager_all_logits(quantized, ids).argmax(-1)
        with torch.no_grad():
            theirs = reference(torch.tensor([ids])).logits[0].double().numpy().argmax(-1)
        per_text.append(int((ours == theirs).sum()))
    positions = POSITIONS_PER_TEXT * len(TEXTS)
    return {"positions": positions, "agree": sum(per_text), "per_text": per_text,
            "top1": round(sum(per_text) / positions, 4)}


def weight_error(model, weights: dict) -> dict:
    """Relative RMS error the quantization adds to the GGUF's (dequantized) weights: over all
    quantized linears together, and over the embedding table."""
    import math

    import torch

    num = den = 0.0
    with torch.no_grad():
        for name, module in model.named_modules():
            if hasattr(module, "dequantized_weight"):  # export/exact_q4.py's linears
                got = module.dequantized_weight()
            elif isinstance(module, torch.nn.Linear) and hasattr(module.weight, "dequantize") \
                    and not name.endswith(".linear"):  # not the inner one of an OffsetLinear
                got = module.weight.dequantize()
            else:
                continue
            ref = weights[f"{name}.weight"].double()
            num += float(((got.double() - ref) ** 2).sum())
            den += float((ref ** 2).sum())
        table = weights["tok_embeddings.weight"].double()
        got = model.tok_embeddings(torch.arange(table.shape[0])).double()
    return {"linear_rel_rms": round(math.sqrt(num / den), 5) if den else None,
            "embedding_rel_rms": round(float((got - table).norm() / table.norm()), 5)}
