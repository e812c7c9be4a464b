"""The encoder-decoder Transformer of Vaswani et al. (2017), after "The Annotated Transformer".

Each class answers to a sentence of the paper; its docstring quotes or paraphrases it.
Shapes in comments: B batch, S source length, T target length, D d_model, H heads, K d_k.
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def clones(module, N):
    """Produce N identical, independent layers ("a stack of N = 6 identical layers")."""
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


class LayerNorm(nn.Module):
    """Layer normalization (Ba et al., 2016) with a trainable gain a_2 and bias b_2.

    The standard form, as Ba et al. and torch.nn.LayerNorm: (x - mean) / sqrt(var + eps) with the biased
    variance (divided by n). The Annotated Transformer's LayerNorm divides by (std + eps) with the unbiased
    std (divided by n - 1) instead; the Inside-the-model tab shows both on the same vector.
    """

    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        # a_2 * (x - mean) / sqrt(var + eps) + b_2, computed by the fused kernel
        return F.layer_norm(x, (x.size(-1),), self.a_2, self.b_2, self.eps)


class Dropout(nn.Dropout):
    """Dropout, "P_drop = 0.1": each element is zeroed with probability p and the rest scaled by 1/(1-p).

    On a CPU the mask is drawn as uniform numbers compared with p (the same distribution as nn.Dropout's
    Bernoulli draws, at a lower cost: docs/performance.md); on other devices nn.Dropout's kernel runs.
    """

    def forward(self, x):
        if not self.training or self.p == 0 or self.p >= 1 or x.device.type != "cpu":
            return super().forward(x)
        keep = torch.rand(x.shape).ge_(self.p).to(x.dtype)  # 1 with probability 1 - p, else 0
        return x.mul(keep).mul_(1 / (1 - self.p))  # the arithmetic of nn.Dropout's own CPU kernel


class SublayerConnection(nn.Module):
    """A residual connection around each sub-layer, with dropout, "followed by layer normalization".

    As in The Annotated Transformer the norm comes first, x + Sublayer(LayerNorm(x)); the paper's own order,
    LayerNorm(x + Sublayer(x)), is PostNormSublayerConnection below."""

    def __init__(self, size, dropout):
        super().__init__()
        self.norm = LayerNorm(size)
        self.dropout = Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


def subsequent_mask(size):
    """Mask out subsequent positions: "prevent positions from attending to subsequent positions"."""
    attn_shape = (1, size, size)
    return torch.triu(torch.ones(attn_shape, dtype=torch.uint8), diagonal=1) == 0  # (1, T, T) bool


def attention(query, key, value, mask=None, dropout=None):
    """Scaled dot-product attention: softmax(Q K^T / sqrt(d_k)) V; returns the output and the weights."""
    d_k = query.size(-1)
    # scores and softmax in float32 whatever the inputs' precision (-1e9 does not fit in float16)
    scores = torch.matmul(query, key.transpose(-2, -1)).float() / math.sqrt(d_k)  # (B, H, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn.to(value.dtype), value), p_attn


class MultiHeadedAttention(nn.Module):
    """Multi-head attention: "h parallel attention layers, or heads", with d_k = d_v = d_model / h.

    Each head computes `attention` above; here PyTorch's fused scaled_dot_product_attention computes the same
    (tests/test_model.py holds them together). A run that records the weights (core/instrument.py) applies
    `attention` itself to the Q, K and V of the call, and its output in place of the fused one.
    """

    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)  # W^Q, W^K, W^V, W^O
        self.dropout = Dropout(p=dropout)

    # the paper's names for the four projections (the weights keep their names, linears.0 ... linears.3)
    w_q = property(lambda self: self.linears[0])
    w_k = property(lambda self: self.linears[1])
    w_v = property(lambda self: self.linears[2])
    w_o = property(lambda self: self.linears[3])

    def _split(self, x, linear):
        nbatches = x.size(0)
        return linear(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)  # (B, H, L, K)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)  # same mask for all heads: (B, 1, Tq|1, Tk)
        q, k, v = (self._split(x, lin) for x, lin in zip((query, key, value), self.linears))  # (B, H, L, K)
        x = F.scaled_dot_product_attention(  # softmax(QK^T / sqrt(d_k)) V
            q, k, v, attn_mask=mask, dropout_p=self.dropout.p if self.training else 0.0)
        return self.concat(x)

    def concat(self, x):
        """Concat(head_1, ..., head_h) W^O: the heads' outputs (B, H, Tq, K) side by side, projected."""
        x = x.transpose(1, 2).contiguous().view(x.size(0), -1, self.h * self.d_k)  # (B, Tq, D)
        return self.linears[-1](x)


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, "applied to each position separately and identically"."""

    activation = staticmethod(F.relu)  # max(0, x)

    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(self.activation(self.w_1(x))))


class EncoderLayer(nn.Module):
    """An encoder layer: "a multi-head self-attention mechanism, and a position-wise fully connected
    feed-forward network"."""

    def __init__(self, size, self_attn, feed_forward, dropout):
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 2)
        self.size = size

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class Encoder(nn.Module):
    """"The encoder is composed of a stack of N identical layers", followed here by a final norm."""

    def __init__(self, layer, N):
        super().__init__()
        self.layers = clones(layer, N)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class DecoderLayer(nn.Module):
    """A decoder layer adds "a third sub-layer, which performs multi-head attention over the output of
    the encoder stack"."""

    def __init__(self, size, self_attn, src_attn, feed_forward, dropout):
        super().__init__()
        self.size = size
        self.self_attn = self_attn
        self.src_attn = src_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 3)

    def forward(self, x, memory, src_mask, tgt_mask):
        m = memory
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, m, m, src_mask))
        return self.sublayer[2](x, self.feed_forward)


class Decoder(nn.Module):
    """"The decoder is also composed of a stack of N identical layers", with a final norm."""

    def __init__(self, layer, N):
        super().__init__()
        self.layers = clones(layer, N)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, memory, src_mask, tgt_mask):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)


class Embeddings(nn.Module):
    """Learned embeddings; "in the embedding layers, we multiply those weights by sqrt(d_model)"."""

    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class PositionalEncoding(nn.Module):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...), added to the embeddings,
    followed by dropout. Computed once in log space and kept as a buffer, not a parameter."""

    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        self.dropout = Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)  # (1, max_len, D)

    def forward(self, x):
        x = x + self.pe[:, :x.size(1)].to(x.dtype)
        return self.dropout(x)


class Generator(nn.Module):
    """"The usual learned linear transformation and softmax function" to next-token log-probabilities."""

    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, x):
        return F.log_softmax(self.proj(x), dim=-1, dtype=torch.float32)  # float32 even under autocast


class EncoderDecoder(nn.Module):
    """The encoder maps the source to "a sequence of continuous representations z"; the decoder then
    "generates an output sequence one element at a time", attending to z."""

    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed  # Sequential(Embeddings, PositionalEncoding)
        self.tgt_embed = tgt_embed
        self.generator = generator

    def forward(self, src, tgt, src_mask, tgt_mask):
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    def encode(self, src, src_mask):
        return self.encoder(self.src_embed(src), src_mask)  # (B, S, D)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)  # (B, T, D)


# ---- other models' variants -------------------------------------------------------------------------------
# Each is a small class of its own beside the paper's, chosen by make_model from the config (core.convert writes a
# Marian / OPUS-MT model's choices there); the classes above never branch on them.

class PostNormSublayerConnection(SublayerConnection):
    """The paper's own order, "LayerNorm(x + Sublayer(x))": the norm after the residual sum (Marian's)."""

    def forward(self, x, sublayer):
        return self.norm(x + self.dropout(sublayer(x)))


class PostNormEncoderLayer(EncoderLayer):
    """An encoder layer whose sub-layers are PostNormSublayerConnections."""

    def __init__(self, size, self_attn, feed_forward, dropout):
        super().__init__(size, self_attn, feed_forward, dropout)
        self.sublayer = clones(PostNormSublayerConnection(size, dropout), 2)


class PostNormDecoderLayer(DecoderLayer):
    """A decoder layer whose sub-layers are PostNormSublayerConnections."""

    def __init__(self, size, self_attn, src_attn, feed_forward, dropout):
        super().__init__(size, self_attn, src_attn, feed_forward, dropout)
        self.sublayer = clones(PostNormSublayerConnection(size, dropout), 3)


class PostNormEncoder(Encoder):
    """A stack of post-norm layers, whose outputs are normalised already: its `norm` is the identity (Marian has
    none), so that `encoder.norm` still names the stack's output."""

    def __init__(self, layer, N):
        super().__init__(layer, N)
        self.norm = nn.Identity()


class PostNormDecoder(Decoder):
    """The decoder's stack of post-norm layers, ending in no norm (PostNormEncoder)."""

    def __init__(self, layer, N):
        super().__init__(layer, N)
        self.norm = nn.Identity()


class GELUFeedForward(PositionwiseFeedForward):
    """The feed-forward network with GELU (the erf form) in the place of max(0, .)."""

    activation = staticmethod(F.gelu)


class SwishFeedForward(PositionwiseFeedForward):
    """The feed-forward network with swish, x * sigmoid(x) (OPUS-MT's), in the place of max(0, .)."""

    activation = staticmethod(F.silu)


class UnscaledEmbeddings(Embeddings):
    """Learned embeddings not multiplied by sqrt(d_model) (Marian models with scale_embedding false)."""

    def forward(self, x):
        return self.lut(x)


class HalvesPositionalEncoding(PositionalEncoding):
    """The same sinusoids laid out as Marian lays them: the D/2 sines first, then the D/2 cosines of the same
    frequencies, computed in float64."""

    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__(d_model, dropout, max_len)
        position = torch.arange(0, max_len).unsqueeze(1).double()
        angle = position / 10000 ** (torch.arange(0, d_model, 2).double() / d_model)  # (max_len, D/2)
        self.pe = torch.cat([angle.sin(), angle.cos()], dim=1).float().unsqueeze(0)  # (1, max_len, D)


FEED_FORWARDS = {"relu": PositionwiseFeedForward, "gelu": GELUFeedForward, "swish": SwishFeedForward}
ACTIVATIONS = tuple(FEED_FORWARDS)  # the config's `activation`
LAYERS = {"pre": (EncoderLayer, DecoderLayer, Encoder, Decoder),  # the config's `norm`
          "post": (PostNormEncoderLayer, PostNormDecoderLayer, PostNormEncoder, PostNormDecoder)}
POSITIONS = {"interleaved": PositionalEncoding, "halves": HalvesPositionalEncoding}  # the config's `pe_layout`


def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1,
               max_len=5000, tie_weights=True, norm="pre", layer_norm_eps=1e-6, activation="relu",
               pe_layout="interleaved", scale_embedding=True, init=True):
    """Construct the model from hyperparameters, with Xavier-uniform init (init=False leaves PyTorch's own, for
    weights about to be loaded over it); "we share the same weight matrix between the two embedding layers and
    the pre-softmax linear transformation".

    The last five choose the variants of other models (converted by core.convert) above; their defaults are the
    Annotated Transformer's classes: where the norm stands ("pre" or "post"), the norms' eps, the feed-forward's
    activation ("relu", "gelu", "swish"), the sinusoids' layout ("interleaved" or "halves") and whether the
    embeddings are multiplied by sqrt(d_model)."""
    c = copy.deepcopy
    EncLayer, DecLayer, Enc, Dec = LAYERS[norm]
    Embed = Embeddings if scale_embedding else UnscaledEmbeddings
    attn = MultiHeadedAttention(h, d_model, dropout)
    ff = FEED_FORWARDS[activation](d_model, d_ff, dropout)
    position = POSITIONS[pe_layout](d_model, dropout, max_len)
    model = EncoderDecoder(
        Enc(EncLayer(d_model, c(attn), c(ff), dropout), N),
        Dec(DecLayer(d_model, c(attn), c(attn), c(ff), dropout), N),
        nn.Sequential(Embed(d_model, src_vocab), c(position)),
        nn.Sequential(Embed(d_model, tgt_vocab), c(position)),
        Generator(d_model, tgt_vocab),
    )
    for m in model.modules():  # the norms' eps, a number of the config (the paper's classes take 1e-6)
        if isinstance(m, LayerNorm):
            m.eps = layer_norm_eps
    if init:
        for p in model.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
    if tie_weights and src_vocab == tgt_vocab:
        shared = model.tgt_embed[0].lut.weight
        model.src_embed[0].lut.weight = shared
        model.generator.proj.weight = shared
    return model


def attention_modules(model):
    """The model's attention sub-layers by kind: encoder self, decoder self and cross (source) attention."""
    return {
        "encoder": [layer.self_attn for layer in model.encoder.layers],
        "decoder": [layer.self_attn for layer in model.decoder.layers],
        "cross": [layer.src_attn for layer in model.decoder.layers],
    }

