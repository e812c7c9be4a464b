"""A Marian (OPUS-MT) model as transformers saves it, read into core's classes.

What transformers' MarianMTModel computes (modeling_marian.py, read at transformers 5.25), and where it goes here:

- each sub-layer is residual then LayerNorm, x = LayerNorm(x + Sublayer(x)) (post-norm), the norms nn.LayerNorm's
  (eps 1e-5), and the stacks end with no norm of their own: `norm: "post"`, `layer_norm_eps: 1e-5`;
- the feed-forward's activation is `activation_function` (opus-mt: "swish", x * sigmoid(x)): `activation`;
- the sinusoids are not interleaved: the D/2 sines, then the D/2 cosines (MarianSinusoidalPositionalEmbedding,
  computed in float64 and never saved with the weights): `pe_layout: "halves"`;
- the embeddings are multiplied by sqrt(d_model) only with `scale_embedding` (opus-mt: true): `scale_embedding`;
- one embedding matrix (`model.shared`) for the source, the target and the output projection, and the logits
  get `final_logits_bias` added: core's tied matrix, and the output projection's bias;
- the source is its pieces then </s> (no <s>), the decoder starts from `decoder_start_token_id` (opus-mt: the
  <pad> id, 58100), ids come from vocab.json, not from the SentencePiece models: the config's special ids and the
  SharedVocabTokenizer (core.checkpoint);
- `generate`'s settings (num_beams, max_length, length_penalty, bad_words_ids, forced_eos_token_id,
  early_stopping) go to the config's "generation", which core.decode's Rules follow.

transformers' MarianConfig has no pre-norm option (nor has any other encoder-decoder of its own with
Marian's weight layout that maps as cleanly), so every Marian model converts to post-norm; core's pre-norm path is
the shipped model's. transformers is imported in the functions below only: the explorer runs without it.
"""
from . import ConvertError

MARIAN_FILES = ("config.json", "source.spm", "target.spm", "vocab.json")
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "swish", "silu": "swish"}
# legacy keys of a Marian config.json (written by older conversions) and the one value that transformers' Marian
# code, which ignores them, agrees with; another value names a model transformers would not run as it says
LEGACY = {"normalize_before": False, "add_final_layer_norm": False, "normalize_embedding": False,
          "add_bias_logits": False, "static_position_embeddings": True}
# generate()'s settings that change what greedy or beam search returns, and the value this code reproduces
UNSUPPORTED_GENERATION = {"repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0,
                          "min_length": 0, "min_new_tokens": None, "renormalize_logits": False,
                          "forced_bos_token_id": None, "suppress_tokens": None, "begin_suppress_tokens": None,
                          "diversity_penalty": 0.0, "num_beam_groups": 1, "sequence_bias": None}


def check_config(hf, path):
    """ConvertError naming the field of a transformers config (a dict, config.json at `path`) this code cannot
    represent."""
    def refuse(field, why):
        raise ConvertError(f"{path}: {field} = {hf.get(field)!r}: {why}")

    if hf.get("model_type") != "marian":
        kind = hf.get("model_type") or ", ".join(hf.get("architectures") or []) or "no model_type"
        raise ConvertError(f"{path}: model_type is {kind!r}, not 'marian': only Marian (OPUS-MT) models convert")
    if not hf.get("share_encoder_decoder_embeddings", True):
        refuse("share_encoder_decoder_embeddings", "separate source and target vocabularies are not supported")
    if hf.get("decoder_vocab_size") not in (None, hf.get("vocab_size")):
        refuse("decoder_vocab_size", f"differs from vocab_size = {hf.get('vocab_size')}")
    if hf.get("activation_function", "gelu") not in ACTIVATIONS:
        refuse("activation_function", f"only {', '.join(ACTIVATIONS)} are supported")
    for a, b in (("encoder_layers", "decoder_layers"), ("encoder_attention_heads", "decoder_attention_heads"),
                 ("encoder_ffn_dim", "decoder_ffn_dim")):
        if hf.get(a) != hf.get(b):
            refuse(b, f"differs from {a} = {hf.get(a)!r}; core's stacks have one size")
    if hf.get("d_model", 1) % hf.get("encoder_attention_heads", 1) or hf.get("d_model", 1) % 2:
        refuse("d_model", "must be even and divisible by the number of heads")
    for field, value in LEGACY.items():
        if field in hf and hf[field] != value:
            refuse(field, "transformers' MarianMTModel ignores it, so the model would not run as it was trained")


def setting(gen, field):
    """A setting of a GenerationConfig as `generate` uses it: its own value, else transformers' default (a field
    left None is filled from GenerationConfig._get_default_generation_params); one-element lists unwrapped."""
    value = getattr(gen, field, None)
    if value is None:
        value = getattr(type(gen), "_get_default_generation_params", dict)().get(field)
    return value[0] if isinstance(value, list) and len(value) == 1 and field.endswith("token_id") else value


def check_generation(gen, path):
    """ConvertError naming a generation setting whose effect core's decoding does not reproduce."""
    for field, plain in UNSUPPORTED_GENERATION.items():
        value = setting(gen, field)
        if value not in (plain, None):
            raise ConvertError(f"{path}: {field} = {value!r} is not reproduced by core's decoding")
    bad = setting(gen, "bad_words_ids") or []
    if any(len(seq) != 1 for seq in bad):
        raise ConvertError(f"{path}: bad_words_ids = {bad!r}: only single forbidden tokens are supported")
    if isinstance(setting(gen, "eos_token_id"), list):
        raise ConvertError(f"{path}: eos_token_id = {gen.eos_token_id!r}: one end token only")


def core_config(hf, gen, tok, source):
    """The config.json of the converted model: core's model keys, the special ids, the tokenizer's files and the
    generation settings."""
    eos, forced_eos = setting(gen, "eos_token_id"), setting(gen, "forced_eos_token_id")
    eos = hf.get("eos_token_id", 0) if eos is None else eos
    max_pos = hf["max_position_embeddings"]
    return {
        "src_vocab": hf["vocab_size"], "tgt_vocab": hf["vocab_size"], "N": hf["encoder_layers"],
        "d_model": hf["d_model"], "d_ff": hf["encoder_ffn_dim"], "h": hf["encoder_attention_heads"],
        "dropout": hf.get("dropout", 0.1), "max_len": max_pos, "tie_weights": hf.get("tie_word_embeddings", True),
        "norm": "post", "layer_norm_eps": 1e-5, "activation": ACTIVATIONS[hf.get("activation_function", "gelu")],
        "pe_layout": "halves", "scale_embedding": bool(hf.get("scale_embedding", False)),
        "max_src_tokens": min(max_pos, int(tok.model_max_length)),
        "max_out_tokens": min(max_pos, int(setting(gen, "max_length")) - 1),
        "source_spm": "source.spm", "target_spm": "target.spm", "vocab": "vocab.json",
        "pad_id": hf["pad_token_id"], "unk_id": tok.unk_token_id, "eos_id": eos, "bos_id": None,
        "decoder_start_id": hf.get("decoder_start_token_id", hf["pad_token_id"]),
        "special_ids": sorted(set(tok.all_special_ids)),
        "clean_up_tokenization_spaces": bool(tok.clean_up_tokenization_spaces),
        "length_penalty": float(setting(gen, "length_penalty")),
        "generation": {"beam_scoring": "transformers", "num_beams": int(setting(gen, "num_beams")),
                       "max_length": int(setting(gen, "max_length")), "early_stopping": setting(gen, "early_stopping"),
                       "forbidden_ids": sorted({seq[0] for seq in setting(gen, "bad_words_ids") or []}),
                       "eos_at_limit": forced_eos is not None and forced_eos == eos},
        "converted_from": {"source": str(source), "model_type": "marian", "architecture": "MarianMTModel"},
    }


def load_marian(directory):
    """(MarianMTModel in float32 and eval mode, MarianTokenizer) from a save_pretrained directory (read with
    transformers 5.25)."""
    import transformers

    path = directory / "config.json"
    try:
        hf = transformers.MarianMTModel.from_pretrained(directory).float()
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        raise ConvertError(f"{path}: transformers cannot load the model beside it "
                           f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    try:
        tok = transformers.MarianTokenizer.from_pretrained(directory)
    except (OSError, ValueError, RuntimeError, KeyError, TypeError) as e:
        raise ConvertError(f"{directory / 'vocab.json'}: the tokenizer's files cannot be read "
                           f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    return hf.eval(), tok


def copy_weights(hf, model):
    """Set core's `model` (built from core_config) to the weights of the MarianMTModel `hf`."""
    import torch

    own = model.state_dict()
    src = hf.state_dict()

    def put(ours, theirs):
        own[ours].copy_(src[theirs].reshape(own[ours].shape))

    def attention(ours, theirs):
        for i, proj in enumerate(("q_proj", "k_proj", "v_proj", "out_proj")):
            put(f"{ours}.linears.{i}.weight", f"{theirs}.{proj}.weight")
            put(f"{ours}.linears.{i}.bias", f"{theirs}.{proj}.bias")

    def norm(ours, theirs):
        put(f"{ours}.a_2", f"{theirs}.weight")
        put(f"{ours}.b_2", f"{theirs}.bias")

    with torch.no_grad():
        for side in ("encoder", "decoder"):
            for i in range(len(getattr(model, side).layers)):
                ours, theirs = f"{side}.layers.{i}", f"model.{side}.layers.{i}"
                attention(f"{ours}.self_attn", f"{theirs}.self_attn")
                norms = ["self_attn_layer_norm"] + (["encoder_attn_layer_norm"] if side == "decoder" else [])
                if side == "decoder":
                    attention(f"{ours}.src_attn", f"{theirs}.encoder_attn")
                for j, name in enumerate(norms + ["final_layer_norm"]):
                    norm(f"{ours}.sublayer.{j}.norm", f"{theirs}.{name}")
                for ff, fc in (("w_1", "fc1"), ("w_2", "fc2")):
                    put(f"{ours}.feed_forward.{ff}.weight", f"{theirs}.{fc}.weight")
                    put(f"{ours}.feed_forward.{ff}.bias", f"{theirs}.{fc}.bias")
        put("src_embed.0.lut.weight", "model.encoder.embed_tokens.weight")
        put("tgt_embed.0.lut.weight", "model.decoder.embed_tokens.weight")
        put("generator.proj.weight", "lm_head.weight")
        put("generator.proj.bias", "final_logits_bias")
    model.load_state_dict(own)
    return model
