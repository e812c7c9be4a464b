"""One word of a German sentence changed for another: the edited copy the Compare tab offers beside a sentence, and
the one the Learn path's patching step reads (both tabs take it from here: no tab imports another)."""

# one word for another of the same gender and case, so that the edited copy stays German
SWAPS = (("Mann", "Junge"), ("Junge", "Mann"), ("Frau", "Katze"), ("Hund", "Vogel"), ("Mädchen", "Kind"),
         ("Kind", "Mädchen"), ("rote", "blaue"), ("roten", "blauen"), ("roter", "blauer"), ("zwei", "drei"),
         ("Zwei", "Drei"))


def edited_default(sentence, tokenizer=None):
    """The sentence with one word changed (the first of SWAPS it has, whose replacement keeps the number of pieces
    where a tokenizer is given); the sentence itself where none applies."""
    words = sentence.split()
    for old, new in SWAPS:
        for i, w in enumerate(words):
            if w.strip(".,!?") == old:
                changed = " ".join(words[:i] + [w.replace(old, new, 1)] + words[i + 1:])
                if tokenizer is None or len(tokenizer.encode(changed)) == len(tokenizer.encode(sentence)):
                    return changed
    return sentence


def edited_any(sentence, tokenizer):
    """The sentence with one word changed for any word of SWAPS that keeps the number of pieces, tried at each word
    in turn (the first word last: it is often an article); the sentence itself where none does. For a tokenizer
    that cuts SWAPS' own pairs into different numbers of pieces, where edited_default finds nothing."""
    words = sentence.split()
    n = len(tokenizer.encode(sentence))
    others = list(dict.fromkeys(w for pair in SWAPS for w in pair))
    for i in [*range(1, len(words)), 0][:len(words)]:
        word = words[i].strip(".,!?")
        for new in others:
            if not word or new == word:
                continue
            changed = " ".join(words[:i] + [words[i].replace(word, new, 1)] + words[i + 1:])
            if len(tokenizer.encode(changed)) == n:
                return changed
    return sentence
