"""The task group's schema: what is learnt (translation, language modelling, masked LM) from which corpus."""

from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, Optional

from omegaconf import MISSING


class TaskKind(Enum):
    translation = "translation"
    lm = "lm"  # causal language modelling: a decoder-only model predicts the next token
    mlm = "mlm"  # masked language modelling (BERT/RoBERTa): an encoder-only model predicts masked tokens

    @property
    def monolingual(self) -> bool:
        return self != TaskKind.translation


class CorpusKind(Enum):
    bible = "bible"  # the embedded corpus, read from SWORD zText modules
    text_files = "text_files"  # the user's own files: {path}/{train,valid,test}.{lang}


@dataclass
class TaskConfig:
    name: str = MISSING
    kind: TaskKind = TaskKind.translation
    corpus: CorpusKind = CorpusKind.bible
    src_lang: Optional[str] = "es"  # null for language modelling
    tgt_lang: str = "en"
    # bible: SWORD module directory and the module used for each language
    sword_dir: str = "/usr/share/sword/modules/texts/ztext"
    modules: Dict[str, str] = field(default_factory=lambda: {"es": "spaRV1909eb", "en": "engKJV2006eb"})
    max_length_ratio: float = 2.5  # verse pairs whose character lengths differ more are dropped as misaligned
    # text_files: a directory holding train.<lang>, valid.<lang>, test.<lang>
    path: Optional[str] = None
    # subwords and example filtering
    vocab_size: int = 8000
    # the vocabulary is trained on a seeded sample of this many training lines (pairs: both sides), 0: all of them
    vocab_sample_lines: int = 2_000_000
    max_len: int = 200  # training examples longer than this (in subwords) are dropped
    # kind=mlm (frozen_sweep.data.masking): mask_prob of the tokens are predicted; of those, mask_replace_prob are
    # shown as <mask>, random_replace_prob as a random piece, the rest unchanged (BERT: 0.15, then 0.8/0.1/0.1)
    mask_prob: float = 0.15
    mask_replace_prob: float = 0.8
    random_replace_prob: float = 0.1
    cache_dir: str = "${oc.env:FROZEN_SWEEP_CACHE,'~/.cache/frozen_sweep'}"
