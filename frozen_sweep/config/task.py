"""The task group's schema: what is learnt (translation, language modelling, masked LM) from which corpus."""

from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, Optional

from omegaconf import MISSING


class TaskKind(Enum):
    translation = "translation"
    lm = "lm"  # causal language modelling: a decoder-only model predicts the next token
    mlm = "mlm"  # masked language modelling (BERT/RoBERTa): an encoder-only model predicts masked tokens
    classify = "classify"  # a label per text or text pair: an encoder-only model with a head on its first token

    @property
    def monolingual(self) -> bool:
        return self != TaskKind.translation


class BibleLabels(Enum):
    """What a classification task on the embedded corpus predicts (frozen_sweep.data.bible_labels)."""

    division = "division"  # a verse → the part of the canon it comes from (law, history, wisdom, ...)
    same_division = "same_division"  # a pair of verses → "same" or "different" part of the canon


class CorpusKind(Enum):
    bible = "bible"  # the embedded corpus, read from SWORD zText modules
    text_files = "text_files"  # the user's own files: {path}/{train,valid,test}.{lang} ({split}.tsv to classify)


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
    # kind=classify (frozen_sweep.data.tsv): {train,valid,test}.tsv start with a header line (skipped)
    header: bool = False
    bible_labels: BibleLabels = BibleLabels.division  # kind=classify on the embedded corpus: what is predicted
    # a SentencePiece model to encode with instead of training one (a fine-tuning job sets its base run's)
    vocab: Optional[str] = None
    cache_dir: str = "${oc.env:FROZEN_SWEEP_CACHE,'~/.cache/frozen_sweep'}"
