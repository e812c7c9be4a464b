"""The Annotated Transformer as a package: model, data, training, decoding and the shipped Translator."""
from .model import EncoderDecoder, MultiHeadedAttention, attention, clones, keep_attention, make_model, subsequent_mask

__all__ = ["EncoderDecoder", "MultiHeadedAttention", "attention", "clones", "keep_attention", "make_model",
           "subsequent_mask", "Translator", "Inspection"]


def __getattr__(name):
    # imported on first use, so that `python -m core.translate` does not import itself twice
    if name in ("Translator", "Inspection"):
        from . import translate
        return getattr(translate, name)
    raise AttributeError(name)
