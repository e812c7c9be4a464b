"""One way to look inside the model: every intermediate state under one name, recorded by one run, with heads
switched off as an argument of that run.

A state is named by the module that produces it and what it is, `"<module path>:<what>"`, the path as
`model.named_modules()` gives it (so the names follow the paper's classes, and the weights' own names):

    src_embed:out, tgt_embed:out                      the embedding + PE                        (B, L, D)
    encoder.layers.0.sublayer.1:out                   the residual stream after a sub-layer      (B, L, D)
    encoder.layers.0.sublayer.1.norm:in, ...:out      a LayerNorm's input and output             (B, L, D)
    encoder.norm:in, decoder.norm:out                 the final LayerNorms                       (B, L, D)
    encoder.layers.0.self_attn:q, :k, :weights        a sub-layer's queries, keys (B, H, L, d_k) and
    decoder.layers.2.src_attn:weights                 attention weights softmax(QK^T/sqrt(d_k))  (B, H, Lq, Lk)
    decoder.layers.1.feed_forward:units               the FFN's activations max(0, xW_1 + b_1)   (B, L, d_ff)
    decoder.layers.1:out                              a decoder layer's output                   (B, T, D)
    generator:logp                                    the output log-probabilities               (B, T, V)

    logp, cache = run_with_cache(model, src, tgt, src_mask, tgt_mask)          # every name
    logp, cache = run_with_cache(model, ..., names=["*:weights"], heads_off=[("cross", 1, 3)])
    cache.stacked(attention_name("cross"), "weights")                            # (layers, B, H, T, S)

Where the norm stands (the config's `norm`) changes what some states hold, never what their names say. Pre-norm
(the default): `sublayer.j.norm:in` is the residual stream before sub-layer j, and `sublayer.j:out` the stream
after it, x + Sublayer(LayerNorm(x)); `encoder.norm` and `decoder.norm` are the final LayerNorms. Post-norm
(Marian): `sublayer.j.norm:in` is the residual sum x + Sublayer(x), `sublayer.j.norm:out` its normalisation,
which is also `sublayer.j:out`, the stream after the sub-layer; the stacks end in no norm, so `encoder.norm` and
`decoder.norm` are the identity and their `:in` and `:out` are both the last layer's output. `feed_forward:units`
are the activation's outputs, whichever it is (ReLU, GELU or swish).

A run is a value of its own: what it records and what it changes (heads switched off, a state restored) are
arguments of the call, kept in a context variable of the calling thread (`intervened`), never on the modules. Two
module hooks of PyTorch's, registered for the whole process while any run is in flight, find the calling thread's
run and do nothing for any other: so the classes of core/model.py stay as the paper reads, a module is left exactly
as it was found, and any number of threads may run one model, or several, at once. An attention sub-layer always
takes the fused kernel; where its weights are asked for, the paper's `attention` is applied to the sub-layer's
own Q, K and V of that call, and its result (the same up to rounding) is the sub-layer's output. The fast decoder (core/decode.py, `IncrementalDecoder`) records its
attention under the same names.

Switching heads off: each head's output zeroed before W^O, the output projection.
MultiHeadAttention(Q, K, V) = Concat(head_1, ..., head_h) W^O. With head i switched off its slice of the
concatenation is zero, so the sub-layer's output is the sum of the other heads' terms head_j W^O_j plus W^O's
bias; everything before W^O, the switched-off head's own attention weights included, is computed as usual.
`switched_off` zeroes them on the way into the W^O of each attention sub-layer with a head off, for the calling
thread only; the fast decoder is handed the same mask (`keep_mask`). With no head off nothing is changed and every
output is bit-identical to the plain model's.

A head is named by a triple (kind, layer, head): kind one of "encoder", "decoder", "cross", layer and head
counted from 0.
"""
import contextvars
import fnmatch
import threading
from contextlib import contextmanager

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

from .model import attention, attention_modules

KINDS = ("encoder", "decoder", "cross")


def model_shape(model):
    """(layers, heads) of the model's attention stacks."""
    a = model.encoder.layers[0].self_attn
    return len(model.encoder.layers), a.h


def check_heads(heads_off, layers, heads):
    """The triples of `heads_off` as a sorted tuple of (kind, layer, head) without repeats; a ValueError that
    names the first bad one otherwise."""
    out = set()
    for item in heads_off or ():
        if not isinstance(item, (tuple, list)) or len(item) != 3:
            raise ValueError(f"heads_off: {item!r} is not a (kind, layer, head) triple")
        kind, layer, head = item
        if kind not in KINDS:
            raise ValueError(f"heads_off: {item!r}: kind must be one of {', '.join(map(repr, KINDS))}")
        for name, value, n in (("layer", layer, layers), ("head", head, heads)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
                raise ValueError(f"heads_off: {item!r}: {name} must be a whole number from 0 to {n - 1}")
        out.add((kind, int(layer), int(head)))
    return tuple(sorted(out, key=lambda t: (KINDS.index(t[0]), t[1], t[2])))


def keep_mask(heads_off, layers, heads):
    """{kind: (1, layers, heads) float tensor, 1 where the head is on, 0 where off} for the kinds with a head
    off; {} when none is."""
    keep = {}
    for kind, layer, head in check_heads(heads_off, layers, heads):
        keep.setdefault(kind, torch.ones(1, layers, heads))[0, layer, head] = 0.0
    return keep


# ---- what a run does to the modules it passes, in the calling thread alone ----------------------------------

class Interventions:
    """What one run does in the calling thread: functions run before a module ({module: [fn(module, args)]}, each
    may return new args) and after it ({module: [fn(module, args, out)]}, each may return a new output), and a
    scratch dict they share. A nested run starts from its enclosing one's."""

    def __init__(self, parent=None):
        self.pre = {m: list(fns) for m, fns in parent.pre.items()} if parent else {}
        self.post = {m: list(fns) for m, fns in parent.post.items()} if parent else {}
        self.scratch = {}

    def before(self, module, fn):
        self.pre.setdefault(module, []).append(fn)

    def after(self, module, fn):
        self.post.setdefault(module, []).append(fn)


_RUN = contextvars.ContextVar("core.instrument.run", default=None)  # the calling thread's Interventions
_hooks = {"runs": 0, "handles": ()}  # the process-wide dispatchers, registered while any run is in flight
_hooks_lock = threading.Lock()


def _dispatch_pre(module, args):
    run = _RUN.get()
    fns = run.pre.get(module) if run is not None else None
    if not fns:
        return None
    for fn in fns:
        new = fn(module, args)
        if new is not None:
            args = new if isinstance(new, tuple) else (new,)
    return args


def _dispatch_post(module, args, out):
    run = _RUN.get()
    fns = run.post.get(module) if run is not None else None
    if not fns:
        return None
    changed = False
    for fn in fns:
        new = fn(module, args, out)
        if new is not None:
            out, changed = new, True
    return out if changed else None


@contextmanager
def intervened():
    """A block whose module calls, in this thread alone, run the functions of the Interventions it yields (add
    them with `before` and `after`). Nothing is set on any module: another thread running the same modules
    meanwhile sees none of it."""
    run = Interventions(_RUN.get())
    with _hooks_lock:
        if _hooks["runs"] == 0:
            _hooks["handles"] = (register_module_forward_pre_hook(_dispatch_pre),
                                 register_module_forward_hook(_dispatch_post))
        _hooks["runs"] += 1
    token = _RUN.set(run)
    try:
        yield run
    finally:
        _RUN.reset(token)
        with _hooks_lock:
            _hooks["runs"] -= 1
            if _hooks["runs"] == 0:
                for handle in _hooks["handles"]:
                    handle.remove()
                _hooks["handles"] = ()


def _zero_heads(keep, h):
    """For W^O's input: the concatenated head outputs (R, L, h * d_k) times keep (R or 1, h)."""
    def before(module, args):
        x = args[0]
        shape = x.shape
        m = keep.to(x.device, x.dtype).view(keep.size(0), *(1,) * (x.dim() - 2), h, 1)
        return (x.view(*shape[:-1], h, -1).mul(m).view(shape),) + tuple(args[1:])
    return before


@contextmanager
def switched_off(model, heads_off=None, keep=None):
    """Within this block the heads named in `heads_off` (triples) are switched off in every path of `model`, for
    the calling thread alone.

    Instead of triples, `keep` may give per-row masks {kind: (R, layers, heads)}: row r of every batch of R rows
    (sentences, or sentences x variants) runs with its own heads kept; R = 1 applies one mask to all rows."""
    if keep is None:
        keep = keep_mask(heads_off, *model_shape(model))
    if not keep:
        yield model
        return
    with intervened() as run:
        for kind, mods in attention_modules(model).items():
            if kind in keep:
                for layer, m in enumerate(mods):
                    run.before(m.linears[-1], _zero_heads(keep[kind][:, layer], m.h))
        yield model


# ---- one instrumented run ------------------------------------------------------------------------------

ATTENTION_PATHS = {"encoder": "encoder.layers.{}.self_attn", "decoder": "decoder.layers.{}.self_attn",
                   "cross": "decoder.layers.{}.src_attn"}


def attention_name(kind, layer=None, what="weights"):
    """The name of one attention sub-layer's state ("cross", 1 -> "decoder.layers.1.src_attn:weights"); with no
    layer, the path with {} in its place (for `Cache.stacked`)."""
    path = ATTENTION_PATHS[kind]
    return f"{path.format(layer)}:{what}" if layer is not None else path


class Cache(dict):
    """{name: tensor} of one run, each with the batch first, detached, in float32."""

    def stacked(self, path, what):
        """The states `<path with {} = 0, 1, ...>:<what>` stacked over the layers: (layers, ...)."""
        out, i = [], 0
        while f"{path.format(i)}:{what}" in self:
            out.append(self[f"{path.format(i)}:{what}"])
            i += 1
        if not out:
            raise KeyError(f"{path.format(0)}:{what} is not in the cache")
        return torch.stack(out)


def state_names(model):
    """Every name a run of `model` can record, in the order the run writes them (encoder, decoder, output)."""
    names = []
    for side, embed in (("encoder", "src_embed"), ("decoder", "tgt_embed")):
        names.append(f"{embed}:out")
        for i, layer in enumerate(getattr(model, side).layers):
            attn = ["self_attn"] + (["src_attn"] if side == "decoder" else [])
            for j, sub in enumerate(attn + ["feed_forward"]):
                base = f"{side}.layers.{i}"
                names += [f"{base}.sublayer.{j}.norm:in", f"{base}.sublayer.{j}.norm:out"]
                names += ([f"{base}.{sub}:{w}" for w in ("q", "k", "weights")] if sub != "feed_forward"
                          else [f"{base}.feed_forward:units"])
                names.append(f"{base}.sublayer.{j}:out")
            if side == "decoder":
                names.append(f"{side}.layers.{i}:out")
        names += [f"{side}.norm:in", f"{side}.norm:out"]
    return names + ["generator:logp"]


def module_at(model, path):
    """The module at a dotted path ("decoder.layers.1.src_attn"), read attribute by attribute and index by
    index, so that layers kept in a plain list are found too."""
    m = model
    for part in path.split("."):
        m = m[int(part)] if part.isdigit() else getattr(m, part)
    return m


def _wanted(names, model):
    """The states named by the patterns `names` (None: all), in the order the run writes them."""
    every = state_names(model)
    if names is None:
        return every
    unknown = [n for n in names if not any(fnmatch.fnmatchcase(e, n) for e in every)]
    if unknown:
        raise KeyError(f"no state is named {unknown[0]!r} (core.instrument.state_names lists them)")
    return [e for e in every if any(fnmatch.fnmatchcase(e, n) for n in names)]


def _record(run, model, wanted, cache):
    """Add to `run` what writes the wanted states into `cache`."""
    def keep(name, fn=lambda module, args, out: out):
        def after(module, args, out):
            cache[name] = fn(module, args, out).detach().float()
        return after

    def heads(mha):
        return lambda module, args, out: out.view(out.size(0), -1, mha.h, mha.d_k).transpose(1, 2)

    def projection(mha, i):  # Q, K or V of this call of `mha`, split into heads: (B, H, L, d_k)
        def after(module, args, out):
            run.scratch[mha, i] = heads(mha)(module, args, out)
        return after

    def weigh(module, args, out):  # the paper's attention on this call's Q, K, V, under its mask, as its output
        mask = args[3] if len(args) > 3 else None
        q, k, v = (run.scratch.pop((module, i)) for i in range(3))
        x, run.scratch[module, "weights"] = attention(q, k, v, mask=None if mask is None else mask.unsqueeze(1),
                                                      dropout=module.dropout)
        return module.concat(x)

    weighed = set()  # attention modules whose weights are computed (a module met twice is weighed once a call)
    for name in wanted:
        path, what = name.split(":")
        m = module_at(model, path)
        if what in ("out", "logp"):
            run.after(m, keep(name))
        elif what == "in":
            run.after(m, keep(name, lambda module, args, out: args[0]))
        elif what in ("q", "k"):
            run.after(m.linears[0 if what == "q" else 1], keep(name, heads(m)))
        elif what == "weights":
            if m not in weighed:
                weighed.add(m)
                for i in range(3):
                    run.after(m.linears[i], projection(m, i))
                run.after(m, weigh)
            run.after(m, keep(name, lambda module, args, out: run.scratch[module, "weights"]))
        elif what == "units":
            run.after(m.w_1, keep(name, lambda module, args, out, act=m.activation: act(out)))


@torch.no_grad()
def run_with_cache(model, src, tgt, src_mask, tgt_mask, names=None, heads_off=None, keep=None, output=True):
    """One teacher-forced pass of `model` over source ids (B, S) and decoder inputs (B, T) under their masks,
    with the heads of `heads_off` (triples) or `keep` (per-row masks, as `switched_off` takes them) switched
    off. Returns the output log-probabilities (B, T, V) (None with `output=False`: the generator is not run)
    and a Cache of the states named in `names` (patterns as fnmatch reads them, e.g. "*:weights"; None: every
    state). The modules are left as they were found, and other threads' runs see nothing of this one."""
    cache, wanted = Cache(), _wanted(names, model)
    with switched_off(model, heads_off, keep), intervened() as run:
        _record(run, model, wanted, cache)
        out = model.decode(model.encode(src, src_mask), src_mask, tgt, tgt_mask)
        logp = model.generator(out) if output or "generator:logp" in wanted else None
    return logp, Cache((name, cache[name]) for name in wanted if name in cache)  # in the order of the pass
