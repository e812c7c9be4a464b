"""The Annotated Transformer as a package: model, data, training, decoding and the shipped Translator."""
from .model import EncoderDecoder, MultiHeadedAttention, attention, clones, make_model, subsequent_mask

__all__ = ["EncoderDecoder", "MultiHeadedAttention", "attention", "clones", "make_model", "subsequent_mask",
           "run_with_cache", "Translator", "Inspection"]


def __getattr__(name):
    # imported on first use, so that `python -m core.translate` does not import itself twice
    if name in ("Translator", "Inspection"):
        from . import translate
        return getattr(translate, name)
    if name == "run_with_cache":
        from .instrument import run_with_cache
        return run_with_cache
    raise AttributeError(name)
