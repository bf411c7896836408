"""A byte-level BPE tokenizer, the kind GPT-2, SmolLM2 and many causal models use.

Four steps turn text into token ids:

1. Cut out special tokens such as ``<|endoftext|>``; they are kept whole.
2. **Pre-tokenise**: every digit becomes a piece of its own; the rest is cut
   into words, each with the space before it (``" cat"``), runs of
   punctuation, and runs of spaces. This is GPT-2's pattern::

       's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

3. Write each piece as UTF-8 bytes, and each byte as one printable
   character (GPT-2's byte alphabet: a space is written ``Ġ``).
4. **BPE**: start from single bytes and keep merging the neighbouring pair
   that comes first in the model's list of merges, until no listed pair is left.

Python's ``re`` has no ``\\p{L}`` (letters) or ``\\p{N}`` (numbers), so the two
classes are built once from :mod:`unicodedata`.
"""

from __future__ import annotations

import functools
import re
import unicodedata

import numpy as np

from .._validate import as_index_array, check_ndim, check_text

__all__ = ["byte_alphabet", "ByteBPE"]

# Unicode White_Space, the meaning of \s in the reference tokenizer's patterns.
_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


@functools.lru_cache(maxsize=1)
def byte_alphabet() -> dict:
    """GPT-2's map from each byte 0..255 to a printable character.

    Printable Latin-1 bytes stand for themselves; the others (control
    characters, space, ...) are moved to the characters from U+0100 on.

    >>> byte_alphabet()[ord(" ")], byte_alphabet()[ord("a")]
    ('Ġ', 'a')
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _ranges(codepoints) -> str:
    """A regex character-class body covering the sorted code points."""
    parts, start, prev = [], None, None
    for cp in codepoints:
        if start is None:
            start = prev = cp
        elif cp == prev + 1:
            prev = cp
        else:
            parts.append((start, prev))
            start = prev = cp
    if start is not None:
        parts.append((start, prev))
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in parts)


@functools.lru_cache(maxsize=1)
def _patterns():
    """(digit splitter, GPT-2 word pattern), with \\p{L} and \\p{N} spelled out."""
    letters, numbers = [], []
    for cp in range(0x110000):
        major = unicodedata.category(chr(cp))[0]
        if major == "L":
            letters.append(cp)
        elif major == "N":
            numbers.append(cp)
    L, N = _ranges(letters), _ranges(numbers)
    words = re.compile(
        rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{_SPACE}{L}{N}]+|[{_SPACE}]+(?![^{_SPACE}])|[{_SPACE}]+"
    )
    return re.compile(f"([{N}])"), words


class ByteBPE:
    """Byte-level BPE tokenizer.

    Parameters
    ----------
    tokens : sequence of str
        The vocabulary in the byte alphabet; a token's id is its position.
    merges : sequence of str
        Pairs ``"a b"``, highest priority first.
    specials : sequence of str
        Tokens kept whole wherever they appear in a text.

    Examples
    --------
    >>> tok = ByteBPE(["a", "b", "Ġ", "ab", "Ġab", "1"], ["a b", "Ġ ab"])
    >>> tok.tokenize("ab ab1")
    ['ab', 'Ġab', '1']
    >>> tok.encode("ab ab1")
    array([3, 4, 5])
    """

    def __init__(self, tokens, merges, specials=()):
        for name, values in (("tokens", tokens), ("merges", merges), ("specials", specials)):
            if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__") \
                    or not all(isinstance(t, str) for t in values):
                raise TypeError(f"{name} must be a sequence of str")
        self.tokens = list(tokens)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.ranks = {}
        for rank, merge in enumerate(merges):
            pair = tuple(merge.split(" "))
            if len(pair) != 2:
                raise ValueError(f"merge {rank} is {merge!r}; expected two tokens separated by one space")
            self.ranks.setdefault(pair, rank)
        kept = sorted((t for t in specials if t in self.ids), key=len, reverse=True)
        self._specials = re.compile("(" + "|".join(map(re.escape, kept)) + ")") if kept else None
        self._cache = {}

    def pre_tokenize(self, text: str) -> list:
        r"""Split text into pieces before BPE.

        >>> ByteBPE(["a"], []).pre_tokenize("It's 2024, ok?")
        ['It', "'s", ' ', '2', '0', '2', '4', ',', ' ok', '?']
        """
        text = check_text(text, "text")
        digits, words = _patterns()
        pieces = []
        for part in digits.split(text):
            if part:
                pieces.extend(words.findall(part))
        return pieces

    def _bpe(self, piece: str) -> list:
        """Merge the bytes of one piece, lowest-ranked pair first."""
        if piece in self._cache:
            return self._cache[piece]
        alphabet = byte_alphabet()
        # A byte missing from the vocabulary (a few control bytes are) is dropped before merging, as
        # the reference tokenizer does when it has no unknown token: its neighbours may then merge.
        symbols = [s for s in (alphabet[b] for b in piece.encode("utf-8")) if s in self.ids]
        while len(symbols) > 1:
            ranked = [(self.ranks.get(pair, np.inf), i) for i, pair in enumerate(zip(symbols, symbols[1:]))]
            rank, _ = min(ranked)
            if rank == np.inf:
                break
            pair = next(p for p in zip(symbols, symbols[1:]) if self.ranks.get(p) == rank)
            merged, i = [], 0
            while i < len(symbols):  # merge every occurrence of the pair, left to right
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        self._cache[piece] = symbols
        return symbols

    def tokenize(self, text: str) -> list:
        """Token strings (in the byte alphabet) of ``text``.

        ``text`` must be valid Unicode: a lone surrogate has no UTF-8 bytes.
        """
        text = check_text(text, "text")
        parts = self._specials.split(text) if self._specials else [text]
        out = []
        for i, part in enumerate(parts):
            if i % 2:
                out.append(part)
            else:
                for piece in self.pre_tokenize(part):
                    out.extend(s for s in self._bpe(piece) if s in self.ids)  # a merge outside the vocabulary: dropped
        return out

    def encode(self, text: str) -> np.ndarray:
        """Token ids of ``text``, shape (T,)."""
        return np.array([self.ids[t] for t in self.tokenize(text)], dtype=np.int64)

    def decode(self, ids) -> str:
        """Text of a list of ids, shape (T,) (bytes that do not form UTF-8 become U+FFFD)."""
        ids = as_index_array(ids, "ids", len(self.tokens), allow_empty=True)
        check_ndim(ids, "ids", 1, "(T,)", exact=True)
        back = {c: b for b, c in byte_alphabet().items()}
        text = "".join(self.tokens[i] for i in ids.tolist())
        return bytes(back[c] for c in text if c in back).decode("utf-8", errors="replace")

    def show(self, token: str) -> str:
        """A token as readable text: ``Ġcat`` -> ``' cat'``."""
        token = check_text(token, "token")
        back = {c: b for b, c in byte_alphabet().items()}
        if not all(c in back for c in token):
            return token
        return bytes(back[c] for c in token).decode("utf-8", errors="replace")
