"""A pretrained checkpoint's own tokenizer as a vocabulary: its tokenizer.json read by the `tokenizers` library, its
special tokens named as transformers names them (tokenizer_config.json, special_tokens_map.json, else config.json's
ids), and its framing of a text taken from the tokenizer's own post-processor, so that a text is read as the model
reads it: LLaMA's `<s> text`, GPT-NeoX's bare text, BERT's `[CLS] text [SEP]`, RoBERTa's `<s> text </s>` (pairs:
`[CLS] a [SEP] b [SEP]`, `<s> a </s></s> b </s>`). A language model's row ends with the checkpoint's eos, as its
documents did in pretraining.

Held as one JSON document (tokenizer.json's content and the special ids): the file a prepared dataset keeps and the
bytes a model file stores, so a run reads text as it was trained to. `task.vocab` names the checkpoint: a directory
saved by `save_pretrained`, or a hub name (read from its pinned snapshot, data/checkpoint_files.py).
"""

import json
from dataclasses import asdict
from pathlib import Path

from frozen_sweep.config import ConfigError, TaskKind
from frozen_sweep.data.specials import Specials

FORMAT = "frozen_sweep.tokenizer/1"
NAMES = ("pad", "eos", "bos", "unk", "mask")  # transformers' `<name>_token`, config.json's `<name>_token_id`


class TokenizerVocab:
    """Token ids <-> text through a checkpoint's tokenizer; encode adds no special token (the batches frame a text)."""

    FILE = "tokenizer_vocab.json"  # its name in a prepared dataset

    def __init__(self, model: bytes, path: Path | None = None):
        from tokenizers import Tokenizer

        self.model, self.path = model, path
        document = json.loads(model)
        self.tokenizer = Tokenizer.from_str(document["tokenizer"])
        specials = document["specials"]
        self.specials = Specials(**{k: tuple(v) if isinstance(v, list) else v for k, v in specials.items()})
        self.source = document["source"]

    def __len__(self) -> int:
        return self.tokenizer.get_vocab_size(with_added_tokens=True)

    def encode_batch(self, texts: list[str], threads: int = 1) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids) -> str:
        """Text of ids up to the first eos; special tokens are skipped. Accepts a list or a 1-d tensor."""
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        if self.specials.eos in ids:
            ids = ids[: ids.index(self.specials.eos)]
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def __getstate__(self):  # picklable for worker processes, as data/vocab.py's Vocab
        return {"model": self.model, "path": self.path}

    def __setstate__(self, state):
        self.__init__(state["model"], state["path"])


def checkpoint_directory(source: str, cache_dir=None) -> tuple[Path, str | None]:
    """The directory holding `source`'s tokenizer (a directory, or a hub name's snapshot) and a hub name's commit."""
    from frozen_sweep.data.checkpoint_files import PretrainedError, locate

    try:
        return locate(source, None, cache_dir)
    except PretrainedError as e:
        raise ConfigError(f"task.vocab={source}: {e}") from None


def checkpoint_vocab(source: str, cache_dir=None) -> TokenizerVocab:
    """The vocabulary of checkpoint `source`; ConfigError naming what is missing from it."""
    directory, commit = checkpoint_directory(source, cache_dir)
    where = f"task.vocab={source}"
    path = directory / "tokenizer.json"
    if not path.is_file():
        raise ConfigError(f"{where}: {directory} holds no tokenizer.json (a fast tokenizer's file, which "
                          "`tokenizers` reads); allowed: a SentencePiece model of ours, or a checkpoint directory or "
                          "hub name with a tokenizer.json")  # fmt: skip
    text = path.read_text(encoding="utf-8")
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_str(text)
    except Exception as e:  # the library raises its own exception type for a malformed file
        raise ConfigError(f"{where}: {path} is not a tokenizer `tokenizers` reads ({e})") from None
    specials = checkpoint_specials(tokenizer, directory, where)
    document = {"format": FORMAT, "source": {"name": str(source), "commit": commit}, "tokenizer": text,
                "specials": asdict(specials)}  # fmt: skip
    return TokenizerVocab(json.dumps(document, ensure_ascii=False, sort_keys=True).encode("utf-8"))


def checkpoint_identity(source: str, cache_dir=None, kind: TaskKind = TaskKind.lm) -> dict[str, str]:
    """What a prepared dataset's key holds of checkpoint `source`'s tokenizer: tokenizer.json's content hash and the
    special ids read with it (not where it was read from: a directory and its hub name's snapshot share data).
    ConfigError for a masked LM's task (`kind`) when the tokenizer has no mask token."""
    from frozen_sweep.data.file_hashes import file_sha256

    vocab = checkpoint_vocab(source)
    if kind == TaskKind.mlm and vocab.specials.mask is None:
        raise ConfigError(f"task.vocab={source}: task.kind=mlm masks with the tokenizer's mask token, and it names "
                          "none (tokenizer_config.json's mask_token: BERT's [MASK], RoBERTa's <mask>); allowed: a "
                          "masked LM's tokenizer")  # fmt: skip
    directory, _ = checkpoint_directory(source)
    return {"vocab": file_sha256(directory / "tokenizer.json", cache_dir),
            "vocab_specials": json.dumps(asdict(vocab.specials), sort_keys=True)}


def named_ids(tokenizer, directory: Path) -> dict[str, int]:
    """The special tokens the checkpoint names, by NAMES: tokenizer_config.json's or special_tokens_map.json's token
    (a string, or transformers' {"content": ...}) first, config.json's `<name>_token_id` (the first of a list) else."""
    found = {}
    for file in ("config.json", "special_tokens_map.json", "tokenizer_config.json"):  # later files win
        try:
            settings = json.loads((directory / file).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for name in NAMES:
            value = settings.get(f"{name}_token_id" if file == "config.json" else f"{name}_token")
            value = value[0] if isinstance(value, list) and value else value
            value = value.get("content") if isinstance(value, dict) else value
            token = tokenizer.token_to_id(value) if isinstance(value, str) else value
            if isinstance(token, int):
                found[name] = token
    return found


def framing(tokenizer) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(prefix, middle, suffix): the special ids the tokenizer's post-processor puts before a text, between a pair's
    texts and after them (read off the pair "a", "b" by which text each id comes from)."""
    try:
        pair = tokenizer.encode("a", "b", add_special_tokens=True)
    except Exception as e:  # the library's own exception type: a model that cannot encode them (no unk)
        raise ValueError(f"its tokenizer cannot encode 'a' and 'b' ({e})") from None
    if not {0, 1} <= set(pair.sequence_ids):
        raise ValueError("its tokenizer encodes 'a' or 'b' to nothing")
    first = [i for i, s in enumerate(pair.sequence_ids) if s == 0]
    second = [i for i, s in enumerate(pair.sequence_ids) if s == 1]
    ids = pair.ids
    return tuple(ids[: first[0]]), tuple(ids[first[-1] + 1 : second[0]]), tuple(ids[second[-1] + 1 :])


def checkpoint_specials(tokenizer, directory: Path, where: str) -> Specials:
    """The checkpoint's special ids. eos: the one it names, else the last of its suffix (BERT's [SEP]). pad: the one
    it names unless that is its bos or eos (a real target: Qwen's and SmolLM2's pad is their eos), else its first
    special token that is neither (LLaMA's <unk>); refused when there is none."""
    named = named_ids(tokenizer, directory)
    try:
        prefix, middle, suffix = framing(tokenizer)
    except ValueError as e:
        raise ConfigError(f"{where}: cannot read how it frames a text: {e}") from None
    eos = named.get("eos", suffix[-1] if suffix else None)
    if eos is None:
        raise ConfigError(f"{where}: its tokenizer names no eos token (tokenizer_config.json's eos_token, "
                          "config.json's eos_token_id) and adds none after a text")  # fmt: skip
    targets = {eos, named.get("bos")}
    specials = [i for i, token in sorted(tokenizer.get_added_tokens_decoder().items()) if token.special]
    pad = named.get("pad") if named.get("pad") not in targets else None
    pad = pad if pad is not None else next((i for i in specials if i not in targets), None)
    if pad is None:
        raise ConfigError(f"{where}: its tokenizer has no token to pad with (a pad token, or a special token other "
                          "than its bos and eos)")  # fmt: skip
    return Specials(pad=pad, eos=eos, bos=named.get("bos"), unk=named.get("unk"), mask=named.get("mask"),
                    prefix=prefix, middle=middle, suffix=suffix)  # fmt: skip
