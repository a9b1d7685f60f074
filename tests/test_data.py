"""Tests of frozen_sweep.data: SWORD reader, Bible extraction and split, the Bible through load_task.

They build their own zText modules with tests/helpers/ztext_writer.py; only the last test reads the installed modules.
"""

import gzip
import itertools
import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from frozen_sweep.config import TaskConfig, TaskKind
from frozen_sweep.data import load_task
from frozen_sweep.data.align import out_of_step_chapters
from frozen_sweep.data.bible import extract_bible, split_of
from frozen_sweep.data.kjv_canon import BOOKS, TESTAMENTS
from frozen_sweep.data.shipped import VERSES_DIR, read_shipped, shipped_path, write_shipped
from frozen_sweep.data.sword import VerseRef, osis_to_text, read_module
from tests.helpers.ztext_writer import write_ztext

WORDS = ["light", "water", "earth", "seed", "tree", "fruit", "day", "night"]
PALABRAS = ["luz", "agua", "tierra", "semilla", "árbol", "fruto", "día", "noche"]


def sentence(words: list[str], ref: VerseRef) -> str:
    """A verse whose length varies with the reference, tagged with it so tests can tell where a line came from."""
    n = 2 + (ref.chapter * 7 + ref.verse * 3) % 6
    return f"[{ref.book} {ref.chapter}:{ref.verse}] " + " ".join(words[(ref.verse + k) % len(words)] for k in range(n))


def tag(line: str) -> VerseRef:
    book, cv = line[1 : line.index("]")].split()
    chapter, verse = map(int, cv.split(":"))
    return VerseRef(book, chapter, verse)


@pytest.fixture(scope="module")
def sword_dir(tmp_path_factory) -> Path:
    """Two modules, Gen 1-50 verses 1-6, with planted problems: a misaligned pair (Gen 2:1), a verse empty on one
    side (Gen 40:6: Gen 40 and 41 are out of step), and a train pair equal to a test pair (Gen 3:1 = Gen 13:1)."""
    root = tmp_path_factory.mktemp("sword")
    en, es = {}, {}
    for chapter in range(1, 51):
        for verse in range(1, 7):
            ref = VerseRef("Gen", chapter, verse)
            en[ref] = f'{sentence(WORDS, ref)} <w lemma="strong:H1">God</w><note placement="foot">a footnote</note>'
            es[ref] = f"{sentence(PALABRAS, ref)} Dios"
    en[VerseRef("Gen", 2, 1)] = " ".join([en[VerseRef("Gen", 2, 1)]] * 4)
    del es[VerseRef("Gen", 40, 6)]
    en[VerseRef("Gen", 3, 1)], es[VerseRef("Gen", 3, 1)] = "The same verse twice.", "El mismo versículo."
    en[VerseRef("Gen", 13, 1)], es[VerseRef("Gen", 13, 1)] = "The same verse twice.", "El mismo versículo."
    write_ztext(root / "engTest", en)
    write_ztext(root / "spaTest", es)
    return root


def make_cfg(tmp_path: Path, sword_dir: Path | None = None, **overrides):
    fields = {"name": "test", "modules": {"es": "spaTest", "en": "engTest"}, "cache_dir": str(tmp_path / "cache")}
    fields.update(sword_dir=str(sword_dir or tmp_path / "no-sword"), vocab_size=120, **overrides)
    return OmegaConf.structured(TaskConfig(**fields))


# ---- SWORD reader ----------------------------------------------------------------------------------------------------


def test_canon_has_kjv_totals():
    assert len(BOOKS) == 66 and sum(len(b.verses) for b in BOOKS) == 1189
    assert [sum(map(sum, (b.verses for b in TESTAMENTS[t]))) for t in ("ot", "nt")] == [23145, 7957]
    assert BOOKS[0].osis == "Gen" and BOOKS[-1].osis == "Rev" and BOOKS[18].verses[118] == 176  # Ps 119


def test_reader_round_trip(tmp_path):
    given = {
        VerseRef("Gen", 1, 1): "In the beginning",
        VerseRef("Ps", 119, 176): "I have gone astray",
        VerseRef("Mal", 4, 6): "lest I come",
        VerseRef("Matt", 1, 1): "The book of the generation",
        VerseRef("Rev", 22, 21): "The grace",
    }
    verses = read_module(write_ztext(tmp_path / "m", given))
    assert len(verses) == 31102
    assert verses[0][0] == VerseRef("Gen", 1, 1) and verses[-1][0] == VerseRef("Rev", 22, 21)
    assert verses[23145][0] == VerseRef("Matt", 1, 1)
    assert {ref: text for ref, text in verses if text} == given


def test_reader_rejects_other_versification(tmp_path):
    module = write_ztext(tmp_path / "m", {VerseRef("Gen", 1, 1): "x"})
    index = (module / "nt.bzv").read_bytes()
    (module / "nt.bzv").write_bytes(index[:-10])
    with pytest.raises(ValueError, match="KJV versification"):
        read_module(module)


def test_markup_cleaning():
    raw = (
        '<div sID="p1" type="x-p"/>¶ And <w lemma="strong:H0430">God</w> <transChange type="added">was</transChange>'
        ' the <divineName><w lemma="strong:H3068">LORD</w></divineName>, \\nd <w>JEHOVAH</w></divineName>;'
        '<note placement="foot"><reference>1.4 </reference>Heb. <seg>between</seg></note> '
        '<title type="x-heading">A heading</title> <q marker="" who="Jesus">Fear &amp; &lt;tremble&gt;</q>.'
        '<l sID="a"/>next<l eID="a"/>'
    )
    assert osis_to_text(raw) == "And God was the LORD, JEHOVAH; Fear & <tremble>. next"
    psalm = '<title canonical="true" type="psalm">A <w>Psalm</w> of David.</title> <lg sID="x"/>LORD, how'
    assert osis_to_text(psalm) == "A Psalm of David. LORD, how"  # superscriptions are scripture, not headings


# ---- Bible extraction and split --------------------------------------------------------------------------------------


def test_out_of_step_chapter_detected():
    lengths = [20, 80, 30, 120, 40, 90, 25, 100, 35, 70]
    pairs = [(VerseRef("Gen", 1, v + 1), "a" * n, "b" * n) for v, n in enumerate(lengths)]
    shifted = [(VerseRef("Gen", 2, v + 1), "a" * n, "b" * m) for v, (n, m) in enumerate(itertools.pairwise(lengths))]
    assert out_of_step_chapters(pairs + shifted) == [("Gen", 2)]


def test_extract_bible_drops_and_splits(tmp_path, sword_dir, caplog):
    cfg = make_cfg(tmp_path, sword_dir)
    with caplog.at_level("INFO"):
        directory = extract_bible(cfg)
    assert "1 misaligned" in caplog.text
    stats = json.loads((directory / "stats.json").read_text())
    assert stats["verses"] == 31102
    assert stats["dropped_empty"] == 31102 - 300 + 1
    assert stats["out_of_step_chapters"] == ["Gen 40", "Gen 41"] and stats["dropped_out_of_step"] == 11
    assert stats["dropped_misaligned"] == 1
    assert stats["removed_from_train_as_held_out_copies"] == 1
    assert stats["sizes"] == {"train": 262, "valid": 12, "test": 12}

    lines = {
        (split, lang): (directory / f"{split}.{lang}").read_text().splitlines()
        for split in ("train", "valid", "test")
        for lang in ("es", "en")
    }
    assert all("footnote" not in line and line.endswith("God") for line in lines["train", "en"])
    chapters = {}
    for split in ("train", "valid", "test"):
        assert len(lines[split, "es"]) == len(lines[split, "en"]) == stats["sizes"][split]
        tagged = [tag(line) for line in lines[split, "en"] if line.startswith("[")]
        assert [tag(line) for line in lines[split, "es"] if line.startswith("[")] == tagged  # aligned
        assert all(split_of(ref) == split for ref in tagged)
        chapters[split] = {ref.chapter for ref in tagged}
    assert chapters["test"] == {13, 38} and chapters["valid"] == {25, 50}
    assert not chapters["train"] & (chapters["valid"] | chapters["test"])
    pairs = {split: set(zip(lines[split, "es"], lines[split, "en"])) for split in ("train", "valid", "test")}
    assert not pairs["train"] & (pairs["valid"] | pairs["test"])

    assert extract_bible(cfg) == directory  # cached
    assert [p.name for p in directory.parent.iterdir()] == [directory.name]  # no temporary leftovers


def test_extract_bible_lm(tmp_path, sword_dir):
    directory = extract_bible(make_cfg(tmp_path, sword_dir, kind=TaskKind.lm, src_lang=None))
    assert sorted(p.name for p in directory.iterdir()) == ["stats.json", "test.en", "train.en", "valid.en"]
    stats = json.loads((directory / "stats.json").read_text())
    assert stats["sizes"] == {"train": 300 - 24 - 1, "valid": 12, "test": 12}  # Gen 3:1 repeats Gen 13:1


def test_missing_modules_explain_install(tmp_path, sword_dir):
    with pytest.raises(FileNotFoundError, match="apt-get install --no-install-recommends sword-text-<name>"):
        extract_bible(make_cfg(tmp_path))
    with pytest.raises(FileNotFoundError, match="task.sword_dir="):
        extract_bible(make_cfg(tmp_path, sword_dir, modules={"es": "spaMissing", "en": "engTest"}))


# ---- load_task -------------------------------------------------------------------------------------------------------


def test_load_task_bible_end_to_end(tmp_path, sword_dir):
    data = load_task(make_cfg(tmp_path, sword_dir, max_len=14))
    assert data.stats["sizes"]["valid"] == 12 and data.stats["sizes"]["test"] == 12
    assert data.stats["train_dropped_long"] > 0
    assert data.stats["sizes"]["train"] == 262 - data.stats["train_dropped_long"]
    assert max(data.train.src_lens.max(), data.train.tgt_lens.max()) <= 14
    assert max(data.test.src_lens.max(), data.test.tgt_lens.max()) > 14  # held-out examples are never dropped
    assert data.vocab.decode(data.valid.tgt_ids(0)) == data.valid.tgt_text[0]
    assert len(data.train.src_lens) == len(data.train) and data.train.src_text is None  # no training text kept
    assert data.stats["corpus"]["dropped_misaligned"] == 1 and Path(data.stats["vocab_path"]).exists()


# ---- the shipped corpus, and the installed modules it comes from (skipped where absent) -----------------------------

REAL = Path("/usr/share/sword/modules/texts/ztext")
SHIPPED = sorted(TaskConfig(name="default").modules.values())


def test_default_corpus_needs_no_sword_modules(tmp_path):
    cfg = OmegaConf.structured(TaskConfig(name="bible", sword_dir=str(tmp_path / "absent"), cache_dir=str(tmp_path)))
    stats = json.loads((extract_bible(cfg) / "stats.json").read_text())
    assert stats["sizes"] == {"train": 27964, "valid": 1271, "test": 1086}  # as documented in bible.py
    assert (stats["dropped_empty"], stats["dropped_out_of_step"], stats["dropped_misaligned"]) == (18, 697, 8)
    assert all(Path(source).parent == VERSES_DIR for source in stats["sources"].values())
    lm = OmegaConf.merge(cfg, {"kind": "lm", "src_lang": None})
    assert json.loads((extract_bible(lm) / "stats.json").read_text())["sizes"] == {
        "train": 28481,
        "valid": 1328,
        "test": 1199,
    }


@pytest.mark.parametrize("damage", ["truncated", "flipped", "lines"])
def test_corrupt_shipped_file_is_named(tmp_path, damage):
    data = shipped_path("engKJV2006eb").read_bytes()
    path = tmp_path / "engKJV2006eb.txt.gz"
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flipped":
        path.write_bytes(data[:5000] + bytes([data[5000] ^ 0xFF]) + data[5001:])
    else:
        path.write_bytes(gzip.compress("one line\n".encode()))
    with pytest.raises(ValueError, match=f"{path}: .*scripts/ship_verses.py"):
        read_shipped(path)


@pytest.mark.parametrize("module", SHIPPED)
@pytest.mark.skipif(not all((REAL / m).is_dir() for m in SHIPPED), reason=f"SWORD modules {SHIPPED} not in {REAL}")
def test_shipped_files_equal_the_extractors_output(tmp_path, module):
    verses = read_module(REAL / module)
    assert verses[0][1].lower().startswith(("in the beginning god", "en el principio"))
    assert read_shipped(shipped_path(module)) == verses
    write_shipped(tmp_path / "regenerated.txt.gz", verses)  # what scripts/ship_verses.py writes: the same bytes
    assert (tmp_path / "regenerated.txt.gz").read_bytes() == shipped_path(module).read_bytes()
