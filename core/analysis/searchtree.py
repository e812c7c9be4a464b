"""The search a beam search made, kept as a tree: every candidate of every step, with what became of it.

`beam_search(..., tree=SearchTree())` records, at each step, the 2k best continuations it looked at: the node's
token, the token's log-probability, the hypothesis's cumulative log-probability (its score), and its fate:

- "kept": one of the k live hypotheses that go on to the next step;
- "pruned": looked at and dropped (outranked, or a </s> beyond the best k);
- "finished": ended with </s> among the best k (under transformers' rule also: reached the limit), scored by
  log P / lp(length) (GNMT's length penalty, or the model's rule: core.decode.finished_score);
- "returned": the finished hypothesis (or, if none finished, the live one) beam search returned.
"""
from dataclasses import dataclass, field

import torch

from ..data import BOS
from ..decode import beam_search


@dataclass
class Node:
    """One hypothesis: the token that extends its parent's, and its scores."""
    id: int
    parent: int | None
    step: int          # its length in tokens after <s>
    token: int
    logp: float        # log p(token | source, parent's tokens)
    score: float       # log P of the whole hypothesis: the sum of logp along its path
    status: str        # "root", "kept", "pruned", "finished" or "returned"
    norm: float | None = None  # score / lp(step) for a finished hypothesis


@dataclass
class SearchTree:
    """The candidates of one sentence's beam search, root first (the node for <s>)."""
    nodes: list = field(default_factory=lambda: [Node(0, None, 0, BOS, 0.0, 0.0, "root")])
    live: list = field(default_factory=lambda: [0])  # the node of each live beam row

    def record_step(self, step, scores, top, beam_idx, tok, keep, k, ends, normalize):
        """One step of beam search: `scores` (k,) of the live rows before it, the 2k candidates (`top` their
        scores, `beam_idx` their rows, `tok` their tokens, `ends` whether each ends the hypothesis: a </s>, or
        under transformers' rule any candidate of the last step) and `keep` (k,), the candidates that stay live;
        `normalize(score, length)` scores a finished one (core.decode.finished_score)."""
        kept = keep.tolist()
        live = [None] * k
        for j, (total, row, token, end) in enumerate(zip(top.tolist(), beam_idx.tolist(), tok.tolist(),
                                                         ends.tolist())):
            parent = self.live[row] if row < len(self.live) else None
            if total == float("-inf") or parent is None:
                continue  # no hypothesis: a copy of the identical start rows, or a forced-out token
            if end:
                status = "finished" if j < k else "pruned"
            else:
                status = "kept" if j in kept else "pruned"
            node = Node(len(self.nodes), parent, step, token, total - scores[row].item(), total, status,
                        normalize(total, step) if status == "finished" else None)
            self.nodes.append(node)
            if status == "kept":
                live[kept.index(j)] = node.id
        self.live = live

    def path(self, node_id):
        """The token ids of a hypothesis, after <s>, in order."""
        out = []
        while node_id is not None and self.nodes[node_id].parent is not None:
            out.append(self.nodes[node_id].token)
            node_id = self.nodes[node_id].parent
        return out[::-1]

    def mark_returned(self, ids):
        """Mark the hypothesis beam search returned: the best finished one with these tokens (then </s>), or,
        when none finished, the live one with these tokens."""
        finished = [n for n in self.nodes if n.status == "finished"  # ended by </s>, or at the limit (transformers)
                    and list(ids) in (self.path(n.id)[:-1], self.path(n.id))]
        if finished:
            max(finished, key=lambda n: n.norm).status = "returned"
            return
        for n in self.nodes:
            if n.status == "kept" and self.path(n.id) == list(ids) and n.id in self.live:
                n.status = "returned"
                return

    @property
    def returned(self):
        return next((n for n in self.nodes if n.status == "returned"), None)


@torch.no_grad()
def search(translator, text, beam=4, alpha=None, max_len=None):
    """The beam search of `text` as a SearchTree, run with the model that `translator.translate` uses for it, so
    that the returned hypothesis is the translation."""
    src_ids, _ = translator.encode_source(text)
    src = torch.tensor([src_ids], device=translator.device)
    tree = SearchTree()
    tree.nodes[0].token = translator.start_id
    max_len = max_len or translator.default_max_len(src.size(1))
    if translator.max_out_tokens is not None:  # no further than the model's positions reach, as translate does
        max_len = min(max_len, int(translator.max_out_tokens))
    beam_search(translator.decoding_model(beam), src, translator.source_mask(src), max_len, beam=beam,
                alpha=translator.alpha if alpha is None else alpha, tree=tree, bos=translator.start_id,
                eos=translator.eos_id, rules=translator.rules)
    return tree
