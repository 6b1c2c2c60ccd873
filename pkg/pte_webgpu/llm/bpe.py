"""BPE merging as HF ``tokenizers`` does it, shared by both vocabulary families.

Symbols merge pair by pair, the pair of lowest rank first and, among equal ranks, the
leftmost: a heap of candidate pairs, each checked when it comes up (a neighbour may have
merged since). That order matters where a merge made later in the list builds on an
earlier one, e.g. merges derived from SentencePiece scores, and the heap keeps long
pieces (a SentencePiece chunk is the whole text between special tokens) O(n log n).
"""

from __future__ import annotations

import heapq

from ..errors import FormatError


def merge_ranks(merges: list[str], vocab: dict[str, int]) -> dict[tuple[str, str], int]:
    """{(left, right): rank} from "left right" lines; a repeated pair keeps its last rank
    (as HF's merge map, built by inserting them in order). Both parts and the merged token
    must be in the vocab (HF refuses such a file too)."""
    ranks: dict[tuple[str, str], int] = {}
    for rank, merge in enumerate(merges):
        if not isinstance(merge, str):
            raise FormatError(f"merge {rank} is {type(merge).__name__}, not a string",
                              field=f"merges[{rank}]")
        left, sep, right = merge.partition(" ")
        if not sep or not left or not right:
            raise FormatError(f"merge {rank} {merge!r} is not 'left right'", field=f"merges[{rank}]")
        if left not in vocab or right not in vocab or left + right not in vocab:
            raise FormatError(f"merge {rank} {merge!r}: a part or the merged token is not in "
                              "the vocab", field=f"merges[{rank}]")
        ranks[(left, right)] = rank
    return ranks


def merge(symbols: list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """The symbols after every merge that applies."""
    n = len(symbols)
    if n < 2:
        return symbols
    sym: list[str | None] = list(symbols)
    nxt = list(range(1, n + 1))
    nxt[-1] = -1
    prv = list(range(-1, n - 1))
    heap = []
    for i in range(n - 1):
        rank = ranks.get((symbols[i], symbols[i + 1]))
        if rank is not None:
            heap.append((rank, i, symbols[i] + symbols[i + 1]))
    heapq.heapify(heap)
    while heap:
        _, i, joined = heapq.heappop(heap)
        left = sym[i]
        j = nxt[i]
        if left is None or j < 0:
            continue
        right = sym[j]
        # stale: the pair at i has changed into one that does not make this token
        if left + right != joined or (left, right) not in ranks:
            continue
        sym[i], sym[j] = joined, None
        k = nxt[j]
        nxt[i] = k
        if k >= 0:
            prv[k] = i
        p = prv[i]
        if p >= 0:
            rank = ranks.get((sym[p], joined))
            if rank is not None:
                heapq.heappush(heap, (rank, p, sym[p] + joined))
        if k >= 0:
            rank = ranks.get((joined, sym[k]))
            if rank is not None:
                heapq.heappush(heap, (rank, i, joined + sym[k]))
    return [s for s in sym if s is not None]


def merges_from_scores(tokens: list[str], scores: list[float]) -> list[str]:
    """Merges for a vocabulary that has scores instead (SentencePiece BPE, e.g. Llama 2's
    GGUF), ordered as transformers derives them: every split of a token into two tokens
    of the vocabulary is a merge carrying that token's score; higher scores first, then
    longer left and right parts; equal ones in vocabulary order (of the token, then of
    its parts' ids). Merging by these ranks is merging by score."""
    if len(scores) != len(tokens):
        raise FormatError(f"{len(scores)} scores for {len(tokens)} tokens",
                          field="tokenizer.ggml.scores")
    ids = {t: i for i, t in enumerate(tokens)}  # a repeated token: its last id
    score_of = dict(zip(tokens, scores))  # ...its first place, its last score
    found = []
    for token, score in score_of.items():
        splits = [(token[:k], token[k:]) for k in range(1, len(token))
                  if token[:k] in ids and token[k:] in ids]
        splits.sort(key=lambda pair: (ids[pair[0]], ids[pair[1]]))
        found.extend((score, left, right) for left, right in splits)
    found.sort(key=lambda m: (m[0], len(m[1]), len(m[2])), reverse=True)  # stable
    return [f"{left} {right}" for _, left, right in found]
