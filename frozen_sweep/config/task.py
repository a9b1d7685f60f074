"""The task group's schema: what is learnt (translation, language modelling, masked LM) from which corpus."""

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional

from omegaconf import MISSING


class TaskKind(Enum):
    translation = "translation"
    lm = "lm"  # causal language modelling: a decoder-only model predicts the next token
    mlm = "mlm"  # masked language modelling (BERT/RoBERTa): an encoder-only model predicts masked tokens
    classify = "classify"  # a label per text or text pair: an encoder-only model with a head on its pooled states
    regression = "regression"  # a real number per text or text pair (GLUE's STS-B): a scalar head, mean squared error

    @property
    def monolingual(self) -> bool:
        return self != TaskKind.translation

    @property
    def labelled(self) -> bool:
        """A target per example (a label or a number) predicted by a head on an encoder."""
        return self in (TaskKind.classify, TaskKind.regression)


class BibleLabels(Enum):
    """What a classification task on the embedded corpus predicts (frozen_sweep.data.bible_labels)."""

    division = "division"  # a verse → the part of the canon it comes from (law, history, wisdom, ...)
    same_division = "same_division"  # a pair of verses → "same" or "different" part of the canon


class CorpusKind(Enum):
    bible = "bible"  # the embedded corpus, read from SWORD zText modules
    text_files = "text_files"  # the user's own files: {path}/{train,valid,test}.{lang} ({split}.tsv to classify)
    hf = "hf"  # what datasets.load_dataset reads: a Hugging Face hub dataset, or local parquet / JSON lines / CSV files


# A field's `read_when` metadata: the values of sibling keys under which the job reads it. Set otherwise (to anything
# but its default), it would be silently ignored: frozen_sweep.config.keys refuses it, saying what to write instead.
GLUE_DATASET = "nyu-mll/glue"  # whose tasks also read GLUE's own folder, as distributed (frozen_sweep.data.glue_files)
PATH = {"read_when": [{"corpus": "text_files"}, {"corpus": "hf", "dataset": GLUE_DATASET}],
        "instead": "task=text_files task.path=DIR task.src_lang=… task.tgt_lang=… (or task.kind=lm task.tgt_lang=… for "
                   "a language model), or GLUE's folder for a GLUE task: task=glue_sst2 task.path=DIR"}  # fmt: skip
BIBLE_ONLY = {"read_when": {"corpus": "bible"}, "instead": "drop it: task=text_files reads only task.path"}
MLM_ONLY = {"read_when": {"kind": "mlm"}, "instead": "task=mlm_bible_en, or task.kind=mlm"}
CLASSIFY_TSV_ONLY = {"read_when": {"kind": ["classify", "regression"], "corpus": "text_files"},
                     "instead": "task=text_files task.kind=classify (or regression) task.path=DIR "
                                "({train,valid,test}.tsv)"}  # fmt: skip
HF_ONLY = {"read_when": {"corpus": "hf"}, "instead": "task=hf task.dataset=NAME (or a named task: task=wmt18_tren, "
                                                    "task=glue_sst2, ...)"}  # fmt: skip
HELD_OUT = {"read_when": [{"corpus": "hf"}, {"corpus": "text_files", "kind": ["classify", "regression"]}],
            "instead": "task=hf task.dataset=NAME task.valid_split=null, or task=text_files task.kind=classify "
                       "task.path=DIR without valid.tsv"}  # fmt: skip
COLUMNS = {"read_when": {"corpus": ["hf", "text_files"]},
           "instead": "task=hf task.dataset=NAME, or task=text_files task.kind=classify task.path=DIR"}
LABELLED_ONLY = {"read_when": {"kind": ["classify", "regression"]},
                 "instead": "drop it: only a classifier's or a regression's table reports metrics by name"}
CLASSIFY_BIBLE_ONLY = {"read_when": {"kind": "classify", "corpus": "bible"},
                       "instead": "task=cls_bible_en or task=cls_pairs_bible_en"}


@dataclass
class TaskConfig:
    name: str = MISSING
    kind: TaskKind = TaskKind.translation
    corpus: CorpusKind = CorpusKind.bible
    src_lang: Optional[str] = "es"  # null for language modelling
    tgt_lang: str = "en"
    # bible: SWORD module directory and the module used for each language
    sword_dir: str = field(default="/usr/share/sword/modules/texts/ztext", metadata=BIBLE_ONLY)
    modules: Dict[str, str] = field(
        default_factory=lambda: {"es": "spaRV1909eb", "en": "engKJV2006eb"}, metadata=BIBLE_ONLY
    )
    # verse pairs whose character lengths differ more are dropped as misaligned
    max_length_ratio: float = field(default=2.5, metadata=BIBLE_ONLY)
    # text_files: a directory holding train.<lang>, valid.<lang>, test.<lang>; a GLUE task (dataset nyu-mll/glue):
    # GLUE's folder as distributed, read instead of the hub (frozen_sweep.data.glue_files)
    path: Optional[str] = field(default=None, metadata=PATH)
    # subwords and example filtering
    vocab_size: int = 8000
    # the vocabulary is trained on a seeded sample of this many training lines (pairs: both sides), 0: all of them
    vocab_sample_lines: int = 2_000_000
    max_len: int = 200  # training examples longer than this (in subwords) are dropped
    # kind=mlm (frozen_sweep.data.masking): mask_prob of the tokens are predicted; of those, mask_replace_prob are
    # shown as <mask>, random_replace_prob as a random piece, the rest unchanged (BERT: 0.15, then 0.8/0.1/0.1)
    mask_prob: float = field(default=0.15, metadata=MLM_ONLY)
    mask_replace_prob: float = field(default=0.8, metadata=MLM_ONLY)
    random_replace_prob: float = field(default=0.1, metadata=MLM_ONLY)
    # kind=classify or regression (frozen_sweep.data.tsv): {train,valid,test}.tsv start with a header line (true) or
    # not (false); null: a first line that looks like a header is refused until this says which it is
    header: Optional[bool] = field(default=None, metadata=CLASSIFY_TSV_ONLY)
    # corpus=hf (frozen_sweep.data.hub): `dataset` is a hub name ("wmt/wmt18"), a local directory in the hub's layout,
    # or a builder (parquet, json, csv) reading `data_files` ({split: path or glob}); `revision`: a hub commit, tag or
    # branch, null: the newest, resolved to its commit once when the sweep is planned and recorded
    dataset: Optional[str] = field(default=None, metadata=HF_ONLY)
    dataset_config: Optional[str] = field(default=None, metadata=HF_ONLY)
    revision: Optional[str] = field(default=None, metadata=HF_ONLY)
    data_files: Optional[Any] = field(default=None, metadata=HF_ONLY)  # {split: path or glob}
    # a builder's own options, passed to datasets.load_dataset: a TSV through csv reads with {sep: "\t"}
    builder_kwargs: Optional[Any] = field(default=None, metadata=HF_ONLY)  # {option: value}
    # which of the dataset's splits is train, valid and test; valid_split=null with valid_from_train=N: N seeded
    # examples of train held out as valid; test_split=validation scores on validation (GLUE: test labels withheld);
    # text_files' classify and regression: N seeded examples of train.tsv held out as valid, without a valid.tsv
    train_split: str = field(default="train", metadata=HF_ONLY)
    valid_split: Optional[str] = field(default="validation", metadata=HF_ONLY)
    test_split: str = field(default="test", metadata=HF_ONLY)
    valid_from_train: int = field(default=0, metadata=HELD_OUT)
    # the columns read (hf: names; text_files' TSV: a header name or a 0-based index). null: hf reads `text` (and
    # `label`); translation reads WMT's `translation` column ({lang: text}), else the columns named src/tgt_column
    text_column: Optional[str] = field(default=None, metadata=COLUMNS)
    text_pair_column: Optional[str] = field(default=None, metadata=COLUMNS)
    label_column: Optional[str] = field(default=None, metadata=COLUMNS)
    src_column: Optional[str] = field(default=None, metadata=HF_ONLY)
    tgt_column: Optional[str] = field(default=None, metadata=HF_ONLY)
    # kind=classify or regression: the metrics its table reports, e.g. [f1, accuracy] (GLUE's MRPC); null: the stop
    # metric, then accuracy and macro-F1 (Pearson and Spearman); allowed values: frozen_sweep/config/report.py
    report: Optional[List[str]] = field(default=None, metadata=LABELLED_ONLY)
    # kind=classify on the embedded corpus: what is predicted
    bible_labels: BibleLabels = field(default=BibleLabels.division, metadata=CLASSIFY_BIBLE_ONLY)
    # a SentencePiece model to encode with instead of training one (a fine-tuning job sets its base run's), or a
    # pretrained checkpoint (directory or hub name) whose tokenizer.json encodes and frames the texts (lm, classify,
    # regression: frozen_sweep.data.checkpoint_vocab)
    vocab: Optional[str] = None
    cache_dir: str = "${oc.env:FROZEN_SWEEP_CACHE,'~/.cache/frozen_sweep'}"
