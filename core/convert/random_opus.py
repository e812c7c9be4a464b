"""Marian models with random weights, saved as transformers saves them, for trying the conversion without a
download: opus-mt-de-en's real shape for the app (`python -m core.convert --random-opus-mt-de-en OUT_DIR`), small
ones for the parity tests (tests/test_convert.py).

The tokenizer is made on the spot: two SentencePiece models, German and English, trained on Multi30k's training
sentences where ../shared/data/multi30k holds them, else on sentences made up here (`made_up_pairs`), and one
vocab.json over both (the pieces of both models, then filler pieces up to the model's vocabulary size, <pad> last),
as Marian's tokenizer reads them.
"""
import io
import json
import random
import tempfile
from pathlib import Path

# opus-mt-de-en's shape (its config.json), without its weights
OPUS_MT_DE_EN = dict(vocab_size=58101, decoder_vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6,
                     encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                     decoder_ffn_dim=2048, activation_function="swish", max_position_embeddings=512,
                     scale_embedding=True, pad_token_id=58100, eos_token_id=0, decoder_start_token_id=58100,
                     forced_eos_token_id=0, share_encoder_decoder_embeddings=True)
OPUS_GENERATION = dict(num_beams=4, max_length=512, bad_words_ids=[[58100]], forced_eos_token_id=0,
                       decoder_start_token_id=58100, eos_token_id=0, pad_token_id=58100)

_WORDS = [  # (German, English): nouns with their article, then verbs, places, adjectives, numbers of people
    [("der Mann", "the man"), ("die Frau", "the woman"), ("das Kind", "the child"), ("der Hund", "the dog"),
     ("die Katze", "the cat"), ("der Junge", "the boy"), ("das Mädchen", "the girl"), ("der Arbeiter", "the worker"),
     ("die Musikerin", "the musician"), ("der Radfahrer", "the cyclist"), ("die Köchin", "the cook"),
     ("der Fischer", "the fisherman"), ("die Lehrerin", "the teacher"), ("der Vogel", "the bird")],
    [("läuft", "runs"), ("sitzt", "sits"), ("springt", "jumps"), ("schläft", "sleeps"), ("wartet", "waits"),
     ("spielt", "plays"), ("lacht", "laughs"), ("arbeitet", "works"), ("tanzt", "dances"), ("liest", "reads"),
     ("singt", "sings"), ("isst", "eats"), ("schwimmt", "swims"), ("klettert", "climbs")],
    [("auf der Straße", "on the street"), ("im Park", "in the park"), ("am See", "at the lake"),
     ("im Garten", "in the garden"), ("auf der Bank", "on the bench"), ("vor dem Haus", "in front of the house"),
     ("am Strand", "on the beach"), ("in der Küche", "in the kitchen"), ("auf dem Markt", "at the market"),
     ("unter einem Baum", "under a tree"), ("neben dem Fluss", "next to the river"), ("im Schnee", "in the snow")],
    [("kleine", "small"), ("alte", "old"), ("junge", "young"), ("fröhliche", "happy"), ("müde", "tired"),
     ("große", "tall"), ("rote", "red"), ("schwarze", "black"), ("", "")],
]


def made_up_pairs(n, seed=0):
    """`n` made-up German/English scene descriptions ("Der alte Mann liest im Park." / "The old man reads in the
    park."), some joined by "und" / "and", drawn by their own generator."""
    rng = random.Random(seed)
    nouns, verbs, places, adjectives = _WORDS
    pairs = []
    for _ in range(n):
        parts = []
        for _ in range(1 + (rng.random() < 0.3)):
            (de_n, en_n), (de_v, en_v), (de_p, en_p), (de_a, en_a) = (rng.choice(w) for w in _WORDS)
            article, noun = de_n.split(" ", 1)
            de = f"{article} {de_a + ' ' if de_a else ''}{noun} {de_v} {de_p}"
            en = f"the {en_a + ' ' if en_a else ''}{en_n.split(' ', 1)[1]} {en_v} {en_p}"
            parts.append((de, en))
        de = " und ".join(p[0] for p in parts)
        en = " and ".join(p[1] for p in parts)
        pairs.append((de[0].upper() + de[1:] + ".", en[0].upper() + en[1:] + "."))
    return pairs


def corpus_pairs(n=3000, seed=0):
    """Sentence pairs to train the tokenizers on: Multi30k's training split where it is at hand, else made up."""
    from ..data import default_data_dir, load_split
    try:
        return load_split(default_data_dir(), "train")
    except (FileNotFoundError, ValueError, OSError):
        return made_up_pairs(n, seed)


def train_spm(sentences, vocab_size):
    """A SentencePiece unigram model (bytes) of about vocab_size pieces (fewer where the text has fewer)."""
    import sentencepiece as spm
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=buf, vocab_size=vocab_size, model_type="unigram",
        character_coverage=1.0, hard_vocab_limit=False, num_threads=2, minloglevel=2,
        unk_id=0, bos_id=-1, eos_id=1, pad_id=-1, unk_piece="<unk>", eos_piece="</s>")
    return buf.getvalue()


def marian_vocab(source_model, target_model, size=None):
    """vocab.json's {piece: id}: </s> 0, <unk> 1, the pieces of both SentencePiece models (source first), filler
    pieces "▁v<n>" up to `size` (None: none), and <pad> last (size - 1), as opus-mt's vocabularies lay them out."""
    import sentencepiece as spm
    vocab = {"</s>": 0, "<unk>": 1}
    for model in (source_model, target_model):
        sp = spm.SentencePieceProcessor(model_proto=model)
        for i in range(sp.get_piece_size()):
            if not (sp.is_control(i) or sp.is_unknown(i)):
                vocab.setdefault(sp.id_to_piece(i), len(vocab))
    size = size or len(vocab) + 1
    if len(vocab) >= size:
        raise ValueError(f"the SentencePiece models hold {len(vocab)} pieces, more than a vocabulary of {size}")
    n = 0
    while len(vocab) < size - 1:
        vocab.setdefault(f"\u2581v{n}", len(vocab))
        n += 1
    vocab["<pad>"] = size - 1
    return vocab


def randomize(model, seed, scale=1.0, eos_bias=0.0, quiet=()):
    """Give a MarianMTModel seeded random weights of its own generator: each matrix N(0, scale^2 / fan_in), each
    norm's gain 1 + N(0, 0.1^2), biases N(0, 0.1^2), the logits' bias N(0, 0.1^2) plus `eos_bias` on </s> and -10
    on the ids `quiet` (the filler pieces, so that outputs read as the tokenizers' pieces). The sinusoids are left
    as they are."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name:
                continue
            noise = torch.randn(p.shape, generator=gen)
            if p.dim() > 1:
                p.copy_(noise * scale / p.shape[-1] ** 0.5)
            elif "layer_norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * noise)
            else:
                p.copy_(0.1 * noise)
        bias = 0.1 * torch.randn(model.final_logits_bias.shape, generator=gen)
        bias[:, model.config.eos_token_id] += eos_bias
        bias[:, list(quiet)] -= 10.0
        model.final_logits_bias.copy_(bias)
    return model


def write_marian(directory, config, generation, pairs, spm_size, seed=0, scale=1.0, eos_bias=0.0):
    """Save a random MarianMTModel of `config` (MarianConfig's keyword arguments; vocab_size None: exactly the
    pieces of the tokenizers) with its MarianTokenizer into `directory`, as transformers' save_pretrained does;
    returns the directory."""
    import transformers
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    models = {name: train_spm([p[k] for p in pairs], spm_size) for k, name in enumerate(("source", "target"))}
    vocab = marian_vocab(models["source"], models["target"], config.get("vocab_size"))
    size = len(vocab)
    for name, blob in models.items():
        (directory / f"{name}.spm").write_bytes(blob)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=1), encoding="utf-8")
    tok = transformers.MarianTokenizer(*(str(directory / f) for f in ("source.spm", "target.spm", "vocab.json")),
                                       source_lang="de", target_lang="en")
    ids = dict(pad_token_id=size - 1, decoder_start_token_id=size - 1, eos_token_id=0, forced_eos_token_id=0)
    hf_config = transformers.MarianConfig(**{**ids, **config, "vocab_size": size, "decoder_vocab_size": size})
    fillers = [i for piece, i in vocab.items() if piece.startswith("\u2581v") and piece[2:].isdigit()]
    model = randomize(transformers.MarianMTModel(hf_config), seed, scale, eos_bias, fillers).eval()
    # opus-mt's generation_config forbids <pad> (the decoder's start): bad_words_ids
    model.generation_config = transformers.GenerationConfig(**{**ids, "bad_words_ids": [[size - 1]], **generation})
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory


def make_random_opus(out_dir, seed=0, dtype="float32"):
    """A random model of opus-mt-de-en's shape, converted into `out_dir` (core.convert); the summary."""
    from . import check_out_dir, convert, require_transformers
    require_transformers()
    check_out_dir(Path(out_dir))  # before the minutes of building
    pairs = corpus_pairs(seed=seed)
    with tempfile.TemporaryDirectory(prefix="random-opus-mt-") as tmp:
        # weights at 3x the usual scale: outputs that differ from sentence to sentence (as in tests/test_convert.py)
        write_marian(Path(tmp) / "marian", OPUS_MT_DE_EN, OPUS_GENERATION, pairs, 8000, seed, scale=3.0)
        return convert(Path(tmp) / "marian", out_dir, dtype)
