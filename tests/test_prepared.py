"""The prepared dataset: round trip against SentencePiece, atomic and checked, rebuilt when damaged, built once by
concurrent preparers, bad input named before anything is kept, identity that follows in-place edits, token ids read
without being mapped into the job."""

import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest
import sentencepiece as spm
from omegaconf import OmegaConf

from frozen_sweep.config import CorpusKind, TaskConfig, TaskKind
from frozen_sweep.data import Split, load_task, plan, preparation
from frozen_sweep.data.identity import data_identity, prepared_key
from frozen_sweep.data.preparation import Reservoir, prepare
from frozen_sweep.data.prepared import DiskArray, problem, side_files
from frozen_sweep.data.split import Side
from frozen_sweep.job.fingerprint import fingerprint
from tests.conftest import compose_config, write_corpus


def task_cfg(path: Path, cache: Path, **fields):
    fields = {"name": "t", "corpus": CorpusKind.text_files, "path": str(path), "cache_dir": str(cache),
              "vocab_size": 60, **fields}  # fmt: skip
    return OmegaConf.structured(TaskConfig(**fields))


def write(path: Path, data: str | bytes) -> None:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def test_round_trip_ids_are_sentencepieces_own(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", sizes=(300, 20, 20))
    lines = (corpus / "train.es").read_text().split("\n")
    write(corpus / "train.es", "\n".join(lines[:5] + [" "] + lines[6:]))  # an empty side: the pair is skipped
    data = load_task(task_cfg(corpus, tmp_path / "cache", vocab_sample_lines=100))
    sp = data.vocab.sp
    train_es = [line.strip() for line in (corpus / "train.es").read_text().split("\n")[:-1]]
    train_en = (corpus / "train.en").read_text().split("\n")[:-1]
    kept = [i for i, line in enumerate(train_es) if line]
    assert data.stats["train_skipped_empty"] == 300 - len(kept) == 1
    for i in (0, 150, len(kept) - 1):
        assert data.train.src_ids(i) == sp.encode(train_es[kept[i]])
        assert data.train.tgt_ids(i) == sp.encode(train_en[kept[i]])
    assert data.valid.tgt_text == (corpus / "valid.en").read_text().split("\n")[:-1]
    assert data.test.src_ids(3) == sp.encode(data.test.src_text[3])
    assert isinstance(data.train.tgt.ids, DiskArray) and data.train.tgt.ids.dtype == np.uint16
    assert data.stats["vocab_size_asked"] == 60 and data.stats["vocab_sampled"] == 100


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads Linux's /proc/self/maps")
def test_a_job_maps_none_of_the_token_ids_and_reads_the_same_batches(tmp_path):
    """Opening a prepared dataset, planning an epoch and collating batches maps no token ids (.bin) nor offsets into
    the process: they are read with pread. A memory map's touched pages count in the job's RSS for its life, 64 KB
    or more around each id read: a 2-step job mapped ≈40 MB of a 400k-pair corpus's ids (docs/performance.md, data
    at scale). The batches are those of the same arrays in memory."""
    corpus = write_corpus(tmp_path / "corpus", sizes=(400, 20, 20))
    data = load_task(task_cfg(corpus, tmp_path / "cache"))
    directory = Path(data.stats["prepared_dir"])
    groups = plan(data.train, 64, True, seed=1)
    batches = [data.train.collate(g.indices, g.length) for g in groups]
    data.valid.sources(), data.test.tgt_ids(3)
    mapped = {Path(line.split()[-1]).name for line in open("/proc/self/maps") if str(directory) in line}
    assert not {name for name in mapped if name.endswith((".bin", ".off.npy"))}, mapped

    def in_memory(split, lang) -> Side:
        bin_name, off_name, len_name = side_files(split, lang)
        ids = np.fromfile(directory / bin_name, np.uint16)
        return Side(ids, np.load(directory / off_name), np.load(directory / len_name))

    same = Split(in_memory("train", "es"), in_memory("train", "en"))
    for group, batch in zip(groups, batches):
        want = same.collate(group.indices, group.length)
        assert batch.src.equal(want.src) and batch.tgt_in.equal(want.tgt_in) and batch.tgt_out.equal(want.tgt_out)
    rows = groups[0].indices  # narrower than its rows: each cut to its first 2 ids
    assert all((a == b).all() for a, b in zip(data.train.tgt.padded(rows, 2), same.tgt.padded(rows, 2)))
    ids = data.train.tgt.ids
    assert ids[-1] == ids[len(ids) - 1] and ids[2:5].tolist() == [ids[2], ids[3], ids[4]]
    assert ids[np.array([[0, 1], [-1, 2]])].shape == (2, 2)
    with pytest.raises(IndexError):
        ids[len(ids)]


def test_vocab_sample_is_seeded_and_chunking_does_not_change_it():
    rows = [[f"s{i}" for i in range(1000)]]
    one = Reservoir(50, 7)
    one.add(rows)
    chunked = Reservoir(50, 7)
    for start in range(0, 1000, 37):
        chunked.add([rows[0][start : start + 37]])
    assert one.columns == chunked.columns and len(set(one.columns[0])) == 50
    assert sum(int(s[1:]) >= 500 for s in one.columns[0]) > 10  # drawn from the whole stream, not its start


def test_smaller_vocabulary_than_asked_is_warned_and_recorded(tmp_path, caplog):
    corpus = write_corpus(tmp_path / "corpus", sizes=(30, 5, 5))
    data = load_task(task_cfg(corpus, tmp_path / "cache", vocab_size=5000))
    assert data.stats["vocab_size"] < data.stats["vocab_size_asked"] == 5000
    assert "fewer than task.vocab_size=5000 asked" in caplog.text  # the job's log says so, prepared or not


def test_damaged_or_half_built_datasets_are_rebuilt_never_used(tmp_path, caplog):
    cfg = task_cfg(write_corpus(tmp_path / "corpus", sizes=(200, 20, 20)), tmp_path / "cache")
    directory = prepare(cfg)
    key = directory.name
    assert problem(directory, key) is None
    stale = directory.parent / f".{key}.tmp-killed"  # what a killed preparation leaves
    stale.mkdir()
    good = (directory / "train.en.bin").read_bytes()
    (directory / "train.en.bin").write_bytes(good[:-2])  # truncated
    assert "train.en.bin has" in problem(directory, key)
    assert prepare(cfg) == directory and (directory / "train.en.bin").read_bytes() == good
    assert "rebuilding it" in caplog.text and not stale.exists()
    (directory / "manifest.json").unlink()  # killed before its manifest: not finished
    assert "manifest" in problem(directory, key)
    assert prepare(cfg) == directory and problem(directory, key) is None


def _prepare_in_child(cfg, log: str, barrier) -> None:
    build = preparation.build

    def counted(*args):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        return build(*args)

    preparation.build = counted
    barrier.wait()
    prepare(cfg)


def test_concurrent_preparers_build_once(tmp_path):
    cfg = task_cfg(write_corpus(tmp_path / "corpus", sizes=(400, 20, 20)), tmp_path / "cache")
    prepared_key(cfg)  # hashes in this process
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(3)
    log = str(tmp_path / "builds")
    children = [context.Process(target=_prepare_in_child, args=(cfg, log, barrier)) for _ in range(3)]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
    assert [child.exitcode for child in children] == [0, 0, 0]
    assert len((tmp_path / "builds").read_text().split()) == 1
    assert problem(prepare(cfg), prepared_key(cfg)[0]) is None


@pytest.mark.parametrize(
    "files, message",
    [
        ({"test.tr": "a\nb\n", "test.en": "a\n"}, r"test.tr has 2 lines but test.en has 1"),
        ({"test.tr": "", "test.en": "a\n"}, r"test.tr is empty"),
        ({"train.tr": b"a\nb\n" * 70000 + b"\xff\n", "train.en": "a\nb\n" * 70001},
         r"train.tr line 140001 is not valid UTF-8 \(byte 0xff at column 1\)"),
        ({"test.tr": b"a\nb\xff\n", "test.en": "a\nb\n"},
         r"test.tr line 2 is not valid UTF-8 \(byte 0xff at column 2\)"),
        ({"valid.en": "a\n \nc\n"}, r"valid.en line 2 is empty; valid sets may not have empty lines"),
        ({"train.tr": " \n\n", "train.en": "a\nb\n"}, r"train.tr is empty"),
    ],
)
def test_bad_input_is_named_and_nothing_is_kept(tmp_path, files, message):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split in ("train", "valid", "test"):
        for lang in ("tr", "en"):
            write(corpus / f"{split}.{lang}", "a b\nc d\ne f\n")
    for name, data in files.items():
        write(corpus / name, data)
    cfg = task_cfg(corpus, tmp_path / "cache", src_lang="tr", tgt_lang="en")
    with pytest.raises(ValueError, match=message):
        prepare(cfg)
    assert [p.name for p in (tmp_path / "cache" / "prepared").iterdir()] == []  # no lock, no temporary folder


def test_an_in_place_edit_changes_the_fingerprint_even_with_its_mtime_set_back(tmp_path, micro_overrides):
    corpus = write_corpus(tmp_path / "corpus", sizes=(50, 5, 5))
    overrides = [o for o in micro_overrides if not o.startswith(("task.path", "task.cache_dir"))]
    cfg = compose_config(*overrides, f"task.path={corpus}", f"task.cache_dir={tmp_path / 'cache'}")
    old = (corpus / "train.en").stat()
    os.utime(corpus / "train.en", ns=(old.st_atime_ns, old.st_mtime_ns - 10**10))  # old enough to be cached
    before = fingerprint(cfg)
    assert list((tmp_path / "cache" / "hashes").iterdir())  # hashed once, kept
    with open(corpus / "train.en", "r+b") as f:  # same size, same inode, new content
        first = f.read(1)
        f.seek(0)
        f.write(b"X" if first != b"X" else b"Y")
    os.utime(corpus / "train.en", ns=(old.st_atime_ns, old.st_mtime_ns - 10**10))  # mtime set back (touch -d)
    after = fingerprint(cfg)
    assert after["data"]["train.en"] != before["data"]["train.en"] and after["sha256"] != before["sha256"]
    assert after["prepared"] != before["prepared"]
    assert data_identity(cfg.task)["train.en"] == after["data"]["train.en"]


def test_lm_corpus_one_side(tmp_path):
    for split, n in (("train", 40), ("valid", 5), ("test", 5)):
        write(tmp_path / f"{split}.en", "".join(f"word{i % 7} other{(i * 3) % 5}\n" for i in range(n)))
    data = load_task(task_cfg(tmp_path, tmp_path / "cache", kind=TaskKind.lm, src_lang=None, vocab_size=40))
    assert data.train.src is None and data.train.src_lens is None and data.test.src_text is None
    assert data.stats["sizes"] == {"train": 40, "valid": 5, "test": 5}
    assert data.vocab.decode(data.test.tgt_ids(4)) == data.test.tgt_text[4]
    assert sorted(p.name for p in Path(data.stats["prepared_dir"]).glob("train.*")) == [
        "train.en.bin", "train.en.len.npy", "train.en.off.npy"]  # fmt: skip
    assert spm.SentencePieceProcessor(model_file=data.stats["vocab_path"]).get_piece_size() == len(data.vocab)
