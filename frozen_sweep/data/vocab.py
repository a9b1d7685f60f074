"""SentencePiece subword vocabulary with fixed special ids (data/specials.py's OURS), trained on a sample of the training
text (data/prepared.py samples it and keeps the model in the prepared dataset); and the reading of any vocabulary a
prepared dataset or a model file holds: ours, or a checkpoint's tokenizer (data/checkpoint_vocab.py).

BPE rather than unigram: the paper's setup is a joint BPE vocabulary, and spm trains BPE on the Bible (~56k lines,
8k pieces) in under a second against several for unigram, with the same number of pieces per sentence (±1%).
"""

import io
from pathlib import Path

import sentencepiece as spm

from frozen_sweep.data.specials import BOS, EOS, OURS, PAD, UNK

# a checkpoint tokenizer's document is a JSON object; a SentencePiece model is a protobuf, whose first byte is a field
# tag (0x0a)
TOKENIZER_FIRST_BYTE = b"{"

TRAINER_SETTINGS = {
    "model_type": "bpe",
    "pad_id": PAD,
    "unk_id": UNK,
    "bos_id": BOS,
    "eos_id": EOS,
    "user_defined_symbols": ["<mask>"],  # id MASK in every vocabulary, whatever the task kind
    "hard_vocab_limit": False,  # a small corpus may not support vocab_size pieces: take fewer instead of failing
    "character_coverage": 1.0,
    "input_sentence_size": 0,  # every sentence given (prepared.py gives a seeded sample) ...
    "shuffle_input_sentence": False,  # ... in order: same text, same model
    "max_sentence_length": 1 << 16,  # bytes; longer lines are skipped by spm
    "num_threads": 1,  # the BPE merges depend on the thread count (1 vs 2 threads: other models): fixed
    "minloglevel": 2,  # warnings and errors only
}


class Vocab:
    """Token ids <-> text. Ids 0-4 are pad, unk, bos, eos, <mask>; encode adds none of them."""

    FILE = "spm.model"  # its name in a prepared dataset
    specials = OURS

    def __init__(self, model: bytes, path: Path | None = None):
        self.model = model
        self.path = path
        self.sp = spm.SentencePieceProcessor(model_proto=model)

    @classmethod
    def load(cls, path: Path) -> "Vocab":
        return cls(Path(path).read_bytes(), Path(path))

    def __len__(self) -> int:
        return self.sp.get_piece_size()

    def encode_batch(self, texts: list[str], threads: int = 1) -> list[list[int]]:
        return self.sp.encode(texts, num_threads=threads)

    def decode(self, ids) -> str:
        """Text of ids up to the first eos; pad and bos are skipped. Accepts a list or a 1-d tensor."""
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        if EOS in ids:
            ids = ids[: ids.index(EOS)]
        return self.sp.decode([i for i in ids if i not in (PAD, BOS)])

    def __getstate__(self):  # picklable for worker processes: the model bytes travel, the C++ object is rebuilt
        return {"model": self.model, "path": self.path}

    def __setstate__(self, state):
        self.__init__(state["model"], state["path"])


def train_vocab(texts: list[str], vocab_size: int) -> Vocab:
    """A vocabulary trained on `texts` (a sample of the training lines; both sides for translation), in memory."""
    if not any(texts):
        raise ValueError("cannot train a subword vocabulary: the training text is empty")
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=buffer, vocab_size=vocab_size, **TRAINER_SETTINGS
    )
    return Vocab(buffer.getvalue())


def vocab_from_bytes(data: bytes, path: Path | None = None):
    """The vocabulary `data` holds (a model file's, a prepared dataset's file): a checkpoint's tokenizer document
    (JSON), or a SentencePiece model."""
    from frozen_sweep.data.checkpoint_vocab import TokenizerVocab

    return TokenizerVocab(data, path) if data[:1] == TOKENIZER_FIRST_BYTE else Vocab(data, path)


def holds_tokenizer(path: Path) -> bool:
    """Whether vocabulary file `path` holds a checkpoint's tokenizer rather than a SentencePiece model."""
    with open(path, "rb") as f:
        return f.read(1) == TOKENIZER_FIRST_BYTE


def read_vocab(path: Path):
    """The vocabulary in file `path`, of either kind."""
    return vocab_from_bytes(Path(path).read_bytes(), Path(path))


def given_vocab(source: str, cache_dir=None):
    """task.vocab's vocabulary: a file (a SentencePiece model of ours, or a vocabulary file a prepared dataset keeps),
    else a checkpoint's tokenizer (a directory saved by save_pretrained, or a hub name)."""
    path = Path(source).expanduser()
    if path.is_file():
        return read_vocab(path)
    from frozen_sweep.data.checkpoint_vocab import checkpoint_vocab

    return checkpoint_vocab(source, cache_dir)


def prepared_vocab_file(directory: Path) -> Path:
    """The vocabulary file of a prepared dataset: ours, or a checkpoint's tokenizer."""
    from frozen_sweep.data.checkpoint_vocab import TokenizerVocab

    directory = Path(directory)
    given = directory / TokenizerVocab.FILE
    return given if given.is_file() else directory / Vocab.FILE
