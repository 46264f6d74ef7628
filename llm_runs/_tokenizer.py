"""Tokenizers: a character-level one (saved with our checkpoints) and a transformers adapter.

Both expose ``encode(text) -> list[int]``, ``decode(ids) -> str``, ``pad_id``, ``bos_id``,
``eos_id``, ``vocab_size`` and ``save(folder)``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["CHAR_TOKENIZER_FILE", "CharTokenizer", "HFTokenizer", "load_tokenizer"]

CHAR_TOKENIZER_FILE = "char_tokenizer.json"
_SPECIALS = ("<pad>", "<bos>", "<eos>")
DEFAULT_ALPHABET = (
    " 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+-*/=<>|?;:.,#()[]_!"
)


class CharTokenizer:
    """One token per character, plus ``<pad>`` (0), ``<bos>`` (1), ``<eos>`` (2).

    Args:
        alphabet: The characters, in id order (ids start at 3).
    """

    def __init__(self, alphabet: str = DEFAULT_ALPHABET) -> None:
        if len(set(alphabet)) != len(alphabet):
            raise ValueError("alphabet has duplicated characters")
        self.alphabet = alphabet
        self._ids = {c: i + len(_SPECIALS) for i, c in enumerate(alphabet)}
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2

    @property
    def vocab_size(self) -> int:
        """Number of token ids."""
        return len(_SPECIALS) + len(self.alphabet)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no specials added)."""
        try:
            return [self._ids[c] for c in text]
        except KeyError as err:
            raise ValueError(
                f"character {err.args[0]!r} is not in the tokenizer alphabet"
            ) from None

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; specials are dropped."""
        n = len(_SPECIALS)
        return "".join(self.alphabet[i - n] for i in ids if n <= int(i) < self.vocab_size)

    def save(self, folder: str | Path) -> None:
        """Write ``char_tokenizer.json`` into ``folder``."""
        Path(folder, CHAR_TOKENIZER_FILE).write_text(json.dumps({"alphabet": self.alphabet}))


class HFTokenizer:
    """Adapter giving a transformers tokenizer the :class:`CharTokenizer` interface."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.eos_id = tok.eos_token_id if tok.eos_token_id is not None else 0
        self.bos_id = tok.bos_token_id if tok.bos_token_id is not None else self.eos_id
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else self.eos_id

    @property
    def vocab_size(self) -> int:
        """Number of token ids."""
        return len(self.tok)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no specials added)."""
        return list(self.tok.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; specials are dropped."""
        return self.tok.decode(list(ids), skip_special_tokens=True)

    def save(self, folder: str | Path) -> None:
        """Save the wrapped tokenizer."""
        self.tok.save_pretrained(str(folder))


def load_tokenizer(folder: str | Path) -> CharTokenizer | HFTokenizer:
    """The tokenizer of a checkpoint folder: ours if ``char_tokenizer.json`` exists."""
    path = Path(folder, CHAR_TOKENIZER_FILE)
    if path.exists():
        return CharTokenizer(json.loads(path.read_text())["alphabet"])
    from transformers import AutoTokenizer

    return HFTokenizer(AutoTokenizer.from_pretrained(str(folder)))
