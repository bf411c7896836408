"""A small WordPiece tokenizer, the kind BERT-style encoders such as MiniLM use.

Three steps turn text into token ids:

1. **Normalise**: drop control characters, turn every kind of space into
   ``" "``, put spaces around Chinese characters, remove accents and lower the case.
2. **Pre-tokenise**: split at spaces, and cut every punctuation mark out as a word of its own.
3. **WordPiece**: split each word into the longest pieces found in the vocabulary,
   left to right; pieces after the first are written with a ``##`` prefix.
   A word that cannot be split this way becomes ``[UNK]``.

The rules follow the reference tokenizer of the model (``BertNormalizer``,
``BertPreTokenizer`` and ``WordPiece`` in the ``tokenizers`` package); the tests
compare the two on many strings.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import numpy as np

from .._validate import check_path, check_positive_int, check_text

__all__ = ["WordPiece"]

# Unicode blocks of CJK ideographs: each such character is a word of its own.
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK)


def _is_space(ch: str) -> bool:
    return ch in "\t\n\r " or unicodedata.category(ch) in ("Zs", "Zl", "Zp")


def _is_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    # Every printable ASCII character that is not a letter or digit counts (so "$", "+", "^" too).
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


class WordPiece:
    """WordPiece tokenizer for an uncased BERT vocabulary.

    Parameters
    ----------
    vocab : sequence of str
        The vocabulary; a token's id is its position.
    unk, cls, sep : str
        The unknown-word token and the two special tokens added around a text.
    max_word_chars : int
        Longer words become ``unk`` without being split.
    specials : sequence of str
        Tokens kept whole when they appear in a text, as the reference does
        (those missing from the vocabulary are ignored).

    Examples
    --------
    >>> tok = WordPiece(["[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "!", "hi"])
    >>> tok.tokenize("Hi, UNAFFABLE!")
    ['hi', '[UNK]', 'un', '##aff', '##able', '!']
    >>> tok.encode("hi!")
    (['[CLS]', 'hi', '!', '[SEP]'], array([1, 7, 6, 2]))
    """

    def __init__(self, vocab, *, unk="[UNK]", cls="[CLS]", sep="[SEP]", max_word_chars=100,
                 specials=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")):
        if isinstance(vocab, (str, bytes)) or not all(isinstance(t, str) for t in vocab):
            raise TypeError("vocab must be a sequence of token strings")
        self.vocab = list(vocab)
        self.ids = {token: i for i, token in enumerate(self.vocab)}
        for name, token in (("unk", unk), ("cls", cls), ("sep", sep)):
            if token not in self.ids:
                raise ValueError(f"{name} token {token!r} is not in the vocabulary")
        self.unk, self.cls, self.sep = unk, cls, sep
        self.max_word_chars = check_positive_int(max_word_chars, "max_word_chars")
        kept = sorted((t for t in specials if t in self.ids), key=len, reverse=True)
        self._specials = re.compile("(" + "|".join(map(re.escape, kept)) + ")") if kept else None

    @classmethod
    def from_file(cls, path, **kwargs) -> "WordPiece":
        """Read a ``vocab.txt`` file: one token per line, the line number is the id."""
        lines = Path(check_path(path, file=True)).read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return cls(lines, **kwargs)

    def normalize(self, text: str) -> str:
        """Clean, space out CJK characters, strip accents and lower-case.

        >>> WordPiece(["[UNK]", "[CLS]", "[SEP]"]).normalize("Café\\tNaïve\\x00")
        'cafe naive'
        """
        text = check_text(text, "text")
        out = []
        for ch in text:
            if ch in ("\x00", "\ufffd") or _is_control(ch):
                continue
            if _is_space(ch):
                out.append(" ")
            elif _is_cjk(ch):
                out.append(f" {ch} ")
            else:
                out.append(ch)
        decomposed = unicodedata.normalize("NFD", "".join(out))
        no_accents = "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
        return no_accents.lower()

    @staticmethod
    def pre_tokenize(text: str) -> list:
        """Split normalised text at spaces and around each punctuation mark.

        >>> WordPiece.pre_tokenize("it's 9.30 (ok)")
        ['it', "'", 's', '9', '.', '30', '(', 'ok', ')']
        """
        text = check_text(text, "text")
        words = []
        for chunk in text.split():
            start = 0
            for i, ch in enumerate(chunk):
                if _is_punctuation(ch):
                    if i > start:
                        words.append(chunk[start:i])
                    words.append(ch)
                    start = i + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    def word_pieces(self, word: str) -> list:
        """Greedy longest-match split of one word into vocabulary pieces."""
        word = check_text(word, "word")
        if len(word) > self.max_word_chars:
            return [self.unk]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    break
                end -= 1
            if end == start:  # no piece fits: the whole word is unknown
                return [self.unk]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list:
        """Token strings of ``text``, without the added ``[CLS]`` and ``[SEP]``.

        ``text`` must be valid Unicode: a lone surrogate is refused, not dropped.
        """
        text = check_text(text, "text")
        parts = self._specials.split(text) if self._specials else [text]
        tokens = []
        for i, part in enumerate(parts):
            if i % 2:  # odd parts are the special tokens found in the text
                tokens.append(part)
            else:
                tokens.extend(p for word in self.pre_tokenize(self.normalize(part)) for p in self.word_pieces(word))
        return tokens

    def encode(self, text: str):
        """Tokens and ids of ``[CLS] text [SEP]``.

        Returns
        -------
        tokens : list of str
        ids : ndarray of int, shape (T,)
        """
        tokens = [self.cls, *self.tokenize(text), self.sep]
        return tokens, np.array([self.ids[t] for t in tokens])
