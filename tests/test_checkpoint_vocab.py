"""Data prepared with a checkpoint's own tokenizer (task.vocab=a checkpoint directory): its texts framed as the model
reads them (each family's special tokens, from its tokenizer's post-processor), prepared once per (tokenizer, corpus)
keyed by the tokenizer file's content, vocabularies past 65,535 ids kept whole, and a run trained on it scoring a line
as transformers tokenizes it."""

import math
import shutil

import numpy as np
import pytest
import torch

from frozen_sweep import load_run
from frozen_sweep.config import ConfigError
from frozen_sweep.data import LabelledSplit, Split, load_task
from frozen_sweep.data.checkpoint_vocab import TokenizerVocab, checkpoint_vocab
from frozen_sweep.data.identity import prepared_key
from frozen_sweep.export import main as export
from frozen_sweep.job.runner import run_job
from tests.conftest import compose_config
from tests.helpers.checkpoints import VERSES, bpe_tokenizer

transformers = pytest.importorskip("transformers")

LM = ["task=text_files", "task.kind=lm", "task.src_lang=null", "task.tgt_lang=en"]


@pytest.fixture(scope="module")
def tokenizer_dirs(tmp_path_factory) -> dict:
    """Each family's tokenizer, saved by transformers as a checkpoint directory holds it."""
    root = tmp_path_factory.mktemp("tokenizers")
    for family in ("llama", "gpt_neox", "bert", "roberta"):
        bpe_tokenizer(family).save_pretrained(root / family)
    return {family: root / family for family in ("llama", "gpt_neox", "bert", "roberta")}


def lm_task(corpus, cache_dir, vocab, *extra):
    return compose_config(*LM, f"task.path={corpus}", f"task.cache_dir={cache_dir}", f"task.vocab={vocab}",
                          *extra).task  # fmt: skip


def vocabularies(directory):
    return checkpoint_vocab(str(directory)), transformers.AutoTokenizer.from_pretrained(directory)


@pytest.mark.parametrize("family", ["llama", "gpt_neox", "bert", "roberta"])
def test_a_text_and_a_pair_are_framed_as_the_checkpoints_tokenizer_frames_them(family, tokenizer_dirs):
    vocab, theirs = vocabularies(tokenizer_dirs[family])
    a, b = VERSES[10:12]
    ids = vocab.encode_batch([a, b])
    pair = LabelledSplit(Split.from_ids(None, [ids[0] + list(vocab.specials.middle) + ids[1]]).tgt, np.zeros(1),
                         specials=vocab.specials).collate([0])  # fmt: skip
    assert pair.tgt_in[0].tolist() == theirs(a, b).input_ids  # [CLS] a [SEP] b [SEP], <s> a </s></s> b </s>, ...
    single = LabelledSplit(Split.from_ids(None, [ids[0]]).tgt, np.zeros(1), specials=vocab.specials).collate([0])
    assert single.tgt_in[0].tolist() == theirs(a).input_ids
    assert vocab.decode(ids[0] + [vocab.specials.eos] + ids[1]) == a


@pytest.mark.parametrize("family", ["llama", "gpt_neox"])
def test_a_language_models_row_is_the_checkpoints_tokens_then_its_eos(family, tokenizer_dirs):
    vocab, theirs = vocabularies(tokenizer_dirs[family])
    a, b = VERSES[10:12]
    ids = vocab.encode_batch([a, b])
    lm = Split.from_ids(None, [ids[0], ids[1]], specials=vocab.specials).collate([0, 1])
    row = theirs(a).input_ids + [vocab.specials.eos]  # a language model's row ends with the checkpoint's eos
    assert lm.tgt_in[0].tolist() == row[:-1] and lm.tgt_out[0].tolist() == row[1:]
    eos_at = len(vocab.specials.prefix) + len(ids[1]) - 1  # the shorter row's targets: its text, then its eos
    assert lm.tgt_out[1, eos_at].item() == vocab.specials.eos
    assert set(lm.tgt_out[1, eos_at + 1 :].tolist()) == {vocab.specials.pad}
    assert vocab.specials.pad not in (vocab.specials.eos, *ids[0], *ids[1])  # padding is never a target


def test_a_tokenizer_without_a_token_to_pad_with_is_refused_in_one_line(tmp_path):
    """Its only special token is its eos, a target: padding with it would hide the targets from the loss."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = Tokenizer(models.WordLevel({"</s>": 0, "a": 1, "b": 2, "beginning": 3}, unk_token=None))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    transformers.PreTrainedTokenizerFast(tokenizer_object=words, eos_token="</s>", pad_token="</s>").save_pretrained(
        tmp_path)  # fmt: skip
    with pytest.raises(ConfigError, match=r"^task.vocab=.*: its tokenizer has no token to pad with \(a pad token, or a "
                       "special token other than its bos and eos\\)$"):  # fmt: skip
        checkpoint_vocab(str(tmp_path))


def test_data_is_prepared_once_per_tokenizer_file_and_corpus(tokenizer_dirs, toy_corpus, cache_dir, tmp_path):
    data = load_task(lm_task(toy_corpus, cache_dir, tokenizer_dirs["llama"]))
    lines = (toy_corpus / "train.en").read_text(encoding="utf-8").splitlines()
    assert isinstance(data.vocab, TokenizerVocab)
    assert data.train.tgt_ids(0) == data.vocab.encode_batch([lines[0]])[0]
    assert data.train.tgt_ids(0) == transformers.AutoTokenizer.from_pretrained(tokenizer_dirs["llama"])(
        lines[0], add_special_tokens=False).input_ids  # fmt: skip
    copy = shutil.copytree(tokenizer_dirs["llama"], tmp_path / "elsewhere")  # the same file elsewhere: the same data
    keys = [prepared_key(lm_task(toy_corpus, cache_dir, where))[0] for where in (tokenizer_dirs["llama"], copy)]
    assert keys[0] == keys[1] and keys[0] in data.stats["prepared_dir"]
    prepared = cache_dir / "prepared" / keys[0] / "manifest.json"
    written = prepared.stat().st_mtime_ns
    load_task(lm_task(toy_corpus, cache_dir, copy))
    assert prepared.stat().st_mtime_ns == written  # opened, not prepared again
    bpe_tokenizer("llama", vocab_size=280).save_pretrained(tmp_path / "other")  # another tokenizer: other data
    assert prepared_key(lm_task(toy_corpus, cache_dir, tmp_path / "other"))[0] != keys[0]
    with pytest.raises(ConfigError, match="task.kind=mlm masks with the tokenizer.s mask token, and it names none"):
        prepared_key(lm_task(toy_corpus, cache_dir, copy, "task.kind=mlm"))


def test_a_vocabulary_past_65535_ids_is_stored_whole(toy_corpus, cache_dir, tmp_path):
    """A word-level tokenizer with 70,000 words (Llama 3's and Qwen's vocabularies are 128k-152k): the words of the
    corpus get ids past 65,535, which 16 bits would wrap."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = sorted({w for name in ("train", "valid", "test")
                    for w in (toy_corpus / f"{name}.en").read_text(encoding="utf-8").split()})  # fmt: skip
    filler = [f"filler{i}" for i in range(70_000 - len(words) - 3)]
    table = {w: i for i, w in enumerate(["<unk>", "<pad>", "</s>", *filler, *words])}  # the corpus's words last
    word_level = Tokenizer(models.WordLevel(table, unk_token="<unk>"))
    word_level.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=word_level, unk_token="<unk>", pad_token="<pad>",
                                                eos_token="</s>")  # fmt: skip
    fast.save_pretrained(tmp_path / "words")
    data = load_task(lm_task(toy_corpus, cache_dir, tmp_path / "words"))
    assert len(data.vocab) == 70_000 and data.train.tgt.ids.dtype == np.uint32
    first = (toy_corpus / "train.en").read_text(encoding="utf-8").split("\n")[0]
    assert data.train.tgt_ids(0) == [table[w] for w in first.split()] and min(data.train.tgt_ids(0)) > 65_535


def test_a_run_on_a_checkpoint_tokenizer_scores_a_line_as_the_model_reads_it(tokenizer_dirs, toy_corpus, cache_dir,
                                                                             tmp_path):  # fmt: skip
    """GPT-NeoX's framing (no bos): a line's scored tokens are the ids transformers gives it (the first predicted
    from nothing is not scored), its eos the last; the log-probability is the model's on exactly those; the same from
    the run's model file."""
    overrides = [*LM, f"task.path={toy_corpus}", f"task.cache_dir={cache_dir}",
                 f"task.vocab={tokenizer_dirs['gpt_neox']}", "model=lm_micro", "trainer=quick", "trainer.max_epochs=1"]
    run_job(compose_config(*overrides), tmp_path / "run", overrides)
    run, theirs = load_run(tmp_path / "run"), transformers.AutoTokenizer.from_pretrained(tokenizer_dirs["gpt_neox"])
    lines = VERSES[20:23]
    scores = run.score(lines)
    eos = run.vocab.specials.eos
    for line, score in zip(lines, scores.lines):
        ids = theirs(line).input_ids + [eos]
        with torch.no_grad():
            logp = run.model(None, torch.tensor([ids[:-1]])).log_softmax(-1)[0]  # (T, V)
        expected = logp.gather(1, torch.tensor(ids[1:])[:, None]).sum().item()
        assert score.tokens == len(theirs(line).input_ids)
        assert math.isclose(score.logprob, expected, rel_tol=1e-5)
    export([str(tmp_path / "run"), str(tmp_path / "model.safetensors")])  # the model file holds the tokenizer too
    from_file = load_run(tmp_path / "model.safetensors").score(lines)
    assert [s.tokens for s in from_file.lines] == [s.tokens for s in scores.lines]
    assert [s.logprob for s in from_file.lines] == pytest.approx([s.logprob for s in scores.lines], rel=1e-6)
