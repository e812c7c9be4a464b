"""Core speaks in keys and numbers; the words live in the project's locale tables, locale/<lang>.json at the
repository's root, which the page (app/i18n.py) reads too. So a finding of the head atlas, a row of the
benchmark or a Lab break is a key of those tables and the values of its {fields}, and a command-line tool writes
it in English from the same words the page shows.

    said("atlas.small-kind", count=3, kind=said("atlas.kind.cross"))   # what core says
    say(that)                  # '3 of cross-attention' (English, from locale/en.json)
    write(that, lookup)        # the same through any lookup of a key's string (the page passes its own)

A field's value is a number (the table's string formats it: "{share:.0%}"), a string that is no word (a token
piece such as "<s>", a name of the code), another `Said`, or a `Listing` of them.
"""
import json
import string
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

LOCALES = Path(__file__).resolve().parents[1] / "locale"
DEFAULT = "en"


@lru_cache(maxsize=None)
def table(lang=DEFAULT):
    """{key: string} of one language (locale/<lang>.json)."""
    return json.loads((LOCALES / f"{lang}.json").read_text(encoding="utf-8"))


class Said(NamedTuple):
    """What core says: a key of the locale tables and the values of the string's {fields}."""
    key: str
    fields: dict


class Listing(NamedTuple):
    """Things said one after another, joined by the string of the key `sep` (", " in English, "、" in Chinese)."""
    sep: str
    items: tuple


def said(key, **fields):
    return Said(key, fields)


def listing(sep, items):
    return Listing(sep, tuple(items))


def write(what, lookup):
    """The words of `what` (a Said, a Listing, or a value put in as it is), each key's string from lookup(key)."""
    if isinstance(what, Said):
        return lookup(what.key).format(**{name: write(v, lookup) for name, v in what.fields.items()})
    if isinstance(what, Listing):
        return lookup(what.sep).join(write(item, lookup) for item in what.items)
    return what


def text(lang, key):
    """The string of `key` in `lang` (English where that table lacks it)."""
    s = table(lang).get(key)
    return table(DEFAULT)[key] if s is None else s


def say(what, lang=DEFAULT):
    """`what` written in `lang` from the locale tables: what the command-line tools print."""
    return write(what, lambda key: text(lang, key))


def fields(s):
    """The {field} names a string takes."""
    return {f for _, f, _, _ in string.Formatter().parse(s) if f}


def keys(what):
    """Every (key, the names of its fields) that `what` says, itself and what it holds: what the tables must have."""
    if isinstance(what, Said):
        yield what.key, set(what.fields)
        for v in what.fields.values():
            yield from keys(v)
    elif isinstance(what, Listing):
        yield what.sep, set()
        for item in what.items:
            yield from keys(item)
