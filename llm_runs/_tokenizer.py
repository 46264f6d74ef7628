"""Tokenizers: a character-level one, a subword (BPE) one trained here with the
``tokenizers`` library, and a transformers adapter.

Both interfaces expose ``encode(text) -> list[int]``, ``encode_prompt(text) -> list[int]``
(what a policy reads before its completion: ``[bos] + encode(text)``, or with
:meth:`HFTokenizer.use_chat` the text as a user turn of the model's chat template),
``decode(ids) -> str``, ``pad_id``, ``bos_id``, ``eos_id``, ``vocab_size`` and
``save(folder)``.

The BPE tokenizer (:func:`train_bpe`) splits text before merging into runs of letters, runs
of one to three digits, runs of whitespace and single other characters, so no token spans a
punctuation mark. A prompt ending in one (``=``, ``?``, ``>`` in the tasks here) therefore
tokenises the same alone and followed by its completion: ``encode(prompt) +
encode(completion) == encode(prompt + completion)``, and the ids a policy is scored on after
its prompt are the ids it saw in pretraining. Every token decodes to at least one character,
so ``n`` generated tokens always cover an ``n``-character output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "BPE_PATTERN",
    "BPE_VOCAB",
    "CHAR_TOKENIZER_FILE",
    "CharTokenizer",
    "HFTokenizer",
    "load_tokenizer",
    "train_bpe",
]

CHAR_TOKENIZER_FILE = "char_tokenizer.json"
_SPECIALS = ("<pad>", "<bos>", "<eos>")
#: Pre-tokenisation of :func:`train_bpe`: letter runs, 1-3 digits, whitespace, one other char.
BPE_PATTERN = r"[A-Za-z]+|[0-9]{1,3}|\s+|[^A-Za-z0-9\s]"
#: Vocabulary size of :func:`train_bpe` (specials and alphabet included).
BPE_VOCAB = 384
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

    def encode_prompt(self, text: str) -> list[int]:
        """Token ids a policy reads before its completion: ``[bos] + encode(text)``."""
        return [self.bos_id, *self.encode(text)]

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; specials are dropped."""
        n = len(_SPECIALS)
        return "".join(self.alphabet[i - n] for i in ids if n <= int(i) < self.vocab_size)

    def save(self, folder: str | Path) -> None:
        """Write ``char_tokenizer.json`` into ``folder``."""
        Path(folder, CHAR_TOKENIZER_FILE).write_text(json.dumps({"alphabet": self.alphabet}))


class HFTokenizer:
    """Adapter giving a transformers tokenizer the :class:`CharTokenizer` interface.

    Attributes:
        chat: Whether :meth:`encode_prompt` wraps a prompt in the chat template (set by
            :meth:`use_chat`; off by default).
    """

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.eos_id = tok.eos_token_id if tok.eos_token_id is not None else 0
        self.bos_id = tok.bos_token_id if tok.bos_token_id is not None else self.eos_id
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else self.eos_id
        self.chat = False

    def use_chat(self, on: bool = True) -> None:
        """Wrap prompts in the chat template (an instruct model's format) from now on.

        Raises:
            ValueError: ``on`` and the tokenizer has no chat template.
        """
        if on and not getattr(self.tok, "chat_template", None):
            raise ValueError("the base's tokenizer has no chat template")
        self.chat = bool(on)

    def encode_prompt(self, text: str) -> list[int]:
        """Token ids a policy reads before its completion: ``[bos] + encode(text)``, or
        with :attr:`chat` the user turn ``text`` in the chat template, the assistant's turn
        opened (the template's own specials, no extra ``bos``)."""
        if not self.chat:
            return [self.bos_id, *self.encode(text)]
        ids = self.tok.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=True, add_generation_prompt=True
        )
        if not isinstance(ids, list):  # transformers 5 may hand back a BatchEncoding
            ids = ids["input_ids"]
        return [int(i) for i in ids]

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


def train_bpe(
    lines: Sequence[str], *, vocab_size: int = BPE_VOCAB, alphabet: str = DEFAULT_ALPHABET
) -> HFTokenizer:
    """Train a byte-pair-encoding tokenizer on ``lines``, nothing downloaded.

    Ids: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3 (a character outside
    ``alphabet``), then the alphabet's characters, then the learnt merges. Wrapped as a
    ``PreTrainedTokenizerFast``, so :meth:`HFTokenizer.save` writes a folder that
    ``AutoTokenizer.from_pretrained`` (and :func:`load_tokenizer`) reads back.

    Args:
        lines: Training text (the task's pretraining corpus).
        vocab_size: Largest vocabulary (fewer when the text has fewer merges).
        alphabet: Characters always in the vocabulary, one token each.

    Returns:
        The tokenizer.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = [*_SPECIALS, "<unk>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(BPE_PATTERN), behavior="isolated")
    tok.decoder = decoders.Fuse()  # concatenate the pieces (no spaces between them)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=sorted(set(alphabet), key=alphabet.index),
        limit_alphabet=len(set(alphabet)),
        show_progress=False,
    )
    tok.train_from_iterator(list(lines), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        clean_up_tokenization_spaces=False,
    )
    return HFTokenizer(fast)
