"""`python -m frozen_sweep.export RUN DIR --format ctranslate2`: CTranslate2 loads what it writes and its greedy search
gives the run's, post- and pre-norm; quantised exports load and are smaller; what it cannot hold is refused. Real micro
runs trained on the toy corpus for a few seconds."""

import pytest
import torch
from omegaconf import OmegaConf

from frozen_sweep import export
from frozen_sweep.evaluate.decode import translate as decode
from frozen_sweep.weights import ctranslate2_model
from frozen_sweep.use.command_line import run_command
from frozen_sweep.weights.finished_run import load_run
from tests.conftest import compose_config
from tests.helpers.jobs import run_cli

ctranslate2 = pytest.importorskip("ctranslate2")
pytestmark = pytest.mark.xdist_group("ctranslate2")  # one test worker trains the module's runs, not each


@pytest.fixture(scope="module")
def runs(toy_corpus, cache_dir, tmp_path_factory) -> dict:
    """Translation runs, post-norm with frozen FFNs and pre-norm with a transformer-layer reservoir, and a language
    model, each trained for a few seconds."""
    base = tmp_path_factory.mktemp("ct2_runs")
    common = ["task=text_files", f"task.path={toy_corpus}", "task.tgt_lang=en", "task.vocab_size=60",
              f"task.cache_dir={cache_dir}", "trainer=quick"]  # fmt: skip
    mt = [*common, "task.src_lang=es", "model=micro", "trainer.max_epochs=8"]
    jobs = {
        "post": [*mt, "freeze=ffn"],
        "pre": [*mt, "model.norm=pre", "model.activation=gelu", "reservoir=transformer", "reservoir.count=1",
                "reservoir.stack=decoder"],
        "lm": [*common, "task.kind=lm", "task.src_lang=null", "model=lm_micro", "trainer.max_epochs=1"],
    }
    for name, overrides in jobs.items():
        proc = run_cli(*overrides, f"hydra.run.dir={base / name}")
        assert proc.returncode == 0, proc.stdout
    return {name: base / name for name in jobs} | {"corpus": toy_corpus}


def translate_ct2(directory, run, lines: list[str], greedy) -> list[str]:
    """CTranslate2's greedy translations, one sentence at a time with our per-sentence length cap."""
    translator = ctranslate2.Translator(str(directory), device="cpu", inter_threads=1, intra_threads=1)
    out = []
    for line in lines:
        pieces = run.vocab.sp.encode(line, out_type=str)
        cap = int(greedy.max_len_a * (len(pieces) + 1) + greedy.max_len_b)  # eos included, as ours
        result = translator.translate_batch([pieces], beam_size=1, max_decoding_length=cap - 1)
        out.append(run.vocab.sp.decode_pieces(result[0].hypotheses[0]))
    return out


@pytest.mark.parametrize("name", ["post", "pre"])
def test_a_ctranslate2_export_loads_and_its_float32_greedy_search_gives_the_runs(name, runs, tmp_path, capsys):
    run_command(export.main, [str(runs[name]), str(tmp_path / "ct2"), "--format", "ctranslate2"])
    assert "CTranslate2 Translator" in capsys.readouterr().err
    assert (tmp_path / "ct2" / "sentencepiece.model").is_file()
    run = load_run(runs[name])
    greedy = OmegaConf.merge(run.config.eval, {"beam": 1})
    lines = (runs["corpus"] / "test.es").read_text().splitlines()[:30]
    expected = decode(run.model, run.vocab.encode_batch(lines), run.vocab, "cpu", greedy)
    assert any(expected), "an untrained-looking run: every translation is empty"
    assert translate_ct2(tmp_path / "ct2", run, lines, greedy) == expected


def test_quantised_exports_load_and_are_smaller(runs, tmp_path, capsys):
    sizes = {}
    for quantization in ("float32", "int8", "int16", "float16"):
        directory = tmp_path / quantization
        run_command(export.main, [str(runs["post"]), str(directory), "--format", "ctranslate2",
                                  "--quantization", quantization])  # fmt: skip
        sizes[quantization] = (directory / "model.bin").stat().st_size
        said = capsys.readouterr().err  # only float32 promises the run's translations
        assert ("; greedy search gives the run's greedy translations;" in said) == (quantization == "float32"), said
        assert quantization == "float32" or f"{quantization} weights: greedy search gives translations close" in said
        translator = ctranslate2.Translator(str(directory), device="cpu")
        assert translator.translate_batch([["▁a"]], max_decoding_length=5)[0].hypotheses  # loads and translates
    assert sizes["int8"] < sizes["int16"] < sizes["float32"]
    assert sizes["float16"] < sizes["float32"]

    run = load_run(runs["post"])  # quantising leaves the model it exported as it was
    before = {name: p.clone() for name, p in run.model.named_parameters()}
    ctranslate2_model.write_ctranslate2(tmp_path / "again", run.config, run.model, run.vocab, "int8")
    assert all(torch.equal(p, before[name]) for name, p in run.model.named_parameters())


@pytest.mark.parametrize(
    "case, message",
    [
        ("lm", "task.kind=lm: --format ctranslate2 writes translation runs (a CTranslate2 Translator)"),
        ("quantization", "--quantization is for --format ctranslate2, not --format hf"),
        ("exists", "exists; --format ctranslate2 writes a new directory"),
    ],
)
def test_what_ctranslate2_cannot_hold_is_refused_in_one_line_writing_nothing(case, message, runs, tmp_path, capsys):
    out = tmp_path / "out"
    args = {
        "lm": [str(runs["lm"]), str(out), "--format", "ctranslate2"],
        "quantization": [str(runs["post"]), str(out), "--format", "hf", "--quantization", "int8"],
        "exists": [str(runs["post"]), str(tmp_path), "--format", "ctranslate2"],
    }[case]
    with pytest.raises(SystemExit) as exit_info:
        run_command(export.main, args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name != "out"] == []


def test_reservoirs_other_than_transformer_layers_are_not_expressible():
    for kind in ("ffn", "bigru", "conv"):
        cfg = compose_config(f"reservoir={kind}", "reservoir.count=1")
        assert ctranslate2_model.not_expressible(cfg) == [
            f"reservoir.type={kind}: CTranslate2 has transformer layers only"
        ]
    assert ctranslate2_model.not_expressible(compose_config("reservoir=transformer", "reservoir.count=1")) == []
