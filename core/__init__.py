"""The Annotated Transformer as a package: model, data, training, decoding and the shipped Translator."""
from .model import (EncoderDecoder, MultiHeadedAttention, attention, clones, keep_attention, make_model,
                    subsequent_mask)
from .translate import Inspection, Translator

__all__ = ["EncoderDecoder", "MultiHeadedAttention", "attention", "clones", "keep_attention", "make_model",
           "subsequent_mask", "Translator", "Inspection"]
