"""SentencePiece subword vocabulary with fixed special ids, trained on a sample of the training text (data/prepared.py
samples it and keeps the model in the prepared dataset).

BPE rather than unigram: the paper's setup is a joint BPE vocabulary, and spm trains BPE on the Bible (~56k lines,
8k pieces) in under a second against several for unigram, with the same number of pieces per sentence (±1%).
"""

import io
from pathlib import Path

import sentencepiece as spm

PAD, UNK, BOS, EOS = 0, 1, 2, 3
MASK = 4  # "<mask>" (masked language modelling): spm puts user-defined symbols right after the control ids
FIRST_PIECE = 5  # the first ordinary subword id: masking never selects, and random replacement never draws, below it

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
