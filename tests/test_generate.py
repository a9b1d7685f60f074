"""Text from a language model (python -m frozen_sweep.generate, load_run(RUN).generate): a LLaMA-style micro LM
(grouped-query attention, rotary positions) trained for a few seconds on the toy corpus; its greedy text is its
transformers export's `generate`, its key/value cache gives the tokens of a full rerun while reading each position
once, a seed repeats a sample; runs of other kinds are refused, saying what to use."""

import re
import subprocess
import sys

import pytest
import torch

from frozen_sweep import export, generate
from frozen_sweep.data.specials import BOS, EOS
from frozen_sweep.evaluate.generation import Sampling, continue_prompt
from frozen_sweep.use.command_line import run_command
from frozen_sweep.use.run import load_run
from frozen_sweep.weights.build import build_model
from tests.conftest import ROOT, compose_config
from tests.helpers.jobs import run_cli

pytestmark = pytest.mark.xdist_group("generate")  # one test worker trains the module's runs, not each

PROMPTS = ["the dog eats", "a man and", "", "the"]
SPEED = r"4 sentences, \d+ tokens in [\d.]+ s: [\d.]+ sentences/s, [\d.]+ tokens/s \(1 thread\); weights: "


def train(directory, *overrides: str, common: list[str]) -> str:
    proc = run_cli(*common, *overrides, f"hydra.run.dir={directory}")
    assert proc.returncode == 0, proc.stdout
    return str(directory)


@pytest.fixture(scope="module")
def runs(toy_corpus, cache_dir, tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("generate")
    common = ["task=text_files", f"task.path={toy_corpus}", "task.tgt_lang=en", "task.vocab_size=60",
              f"task.cache_dir={cache_dir}", "trainer=quick"]  # fmt: skip
    return {
        "lm": train(base / "lm", "task.kind=lm", "task.src_lang=null", "model=llama_micro", "freeze=att",
                    "trainer.max_epochs=3", common=common),  # fmt: skip
        "mt": train(base / "mt", "task.src_lang=es", "model=micro", "trainer.max_steps=1", "eval.beam=1",
                    "trainer.valid_bleu_sentences=0", common=common),  # fmt: skip
    }


def prompt_ids(run, text: str) -> torch.Tensor:
    return torch.tensor([[BOS, *run.vocab.encode_batch([text])[0]]])  # (1, T)


def test_the_command_gives_the_transformers_exports_greedy_generate(runs, tmp_path):
    transformers = pytest.importorskip("transformers")
    run_command(export.main, [runs["lm"], str(tmp_path / "hf"), "--format", "hf"])
    llama = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "hf").eval()
    out = subprocess.run([sys.executable, "-m", "frozen_sweep.generate", runs["lm"], "--max-new-tokens", "12",
                          "--threads", "1"], input="\n".join(PROMPTS) + "\n", capture_output=True, text=True,
                         cwd=ROOT, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    run = load_run(runs["lm"])
    expected = []
    for text in PROMPTS:
        ids = prompt_ids(run, text)
        theirs = llama.generate(ids, max_new_tokens=12, do_sample=False)[0].tolist()  # prompt, continuation, eos
        expected.append(run.vocab.decode(theirs) + "\n")
        assert continue_prompt(run.model, ids, 12, EOS) == [t for t in theirs[ids.shape[1] :] if t != EOS]
    assert out.stdout == "".join(expected)
    assert all(len(line) > len(text) + 1 for line, text in zip(expected, PROMPTS))  # each continued
    assert re.search(SPEED, out.stderr), out.stderr


def positions_read(model, work) -> int:
    """The decoder positions `work()` embeds (each position the decoder runs is embedded once)."""
    count = [0]
    handle = model.tgt_embed.register_forward_hook(lambda module, args, out: count.__setitem__(0, count[0] +
                                                                                                 out.shape[1]))
    try:
        work()
    finally:
        handle.remove()
    return count[0]


@pytest.mark.parametrize("search", ["greedy", "beam", "sample"])
@pytest.mark.parametrize("model_kind", ["llama", "sinusoidal"])
def test_the_cache_gives_a_full_reruns_tokens_reading_each_position_once(model_kind, search, runs):
    """The trained LLaMA-style LM (rotary positions, grouped-query attention), and an untrained decoder with the
    paper's sinusoidal positions and one key/value head per query head."""
    run = load_run(runs["lm"])
    ids = prompt_ids(run, "the dog eats")
    if model_kind == "llama":
        model = run.model
    else:
        cfg = compose_config("task.kind=lm", "task.src_lang=null", "model=lm_micro", "model.decoder_layers=2")
        model = build_model(cfg, len(run.vocab))
    options = {"greedy": {}, "beam": {"beam": 3}, "sample": {"sampling": Sampling(top_k=5)}}[search]

    def tokens(cache: bool) -> list[int]:
        generator = torch.Generator().manual_seed(3)
        return continue_prompt(model, ids, 20, eos=-1, generator=generator, cache=cache, **options)  # no eos: 20

    cached, rerun = tokens(True), tokens(False)
    assert cached == rerun and len(cached) == 20
    T = ids.shape[1]
    assert positions_read(model, lambda: tokens(True)) == T + 19  # the prompt once, then each new position once
    assert positions_read(model, lambda: tokens(False)) == sum(range(T, T + 20))


def test_a_layer_caches_the_key_value_heads_not_one_per_query_head(runs):
    run = load_run(runs["lm"])
    caches = run.model.new_caches()
    with torch.no_grad():
        run.model.eval().decode(prompt_ids(run, "the dog eats"), caches=caches)
    heads, kv_heads = run.config.model.heads, run.config.model.kv_heads
    assert kv_heads < heads and caches[0]["self_k"].shape[1] == caches[0]["self_v"].shape[1] == kv_heads


def test_a_seed_repeats_a_sample_and_top_k_1_is_greedy(runs):
    run = load_run(runs["lm"], threads=1)
    greedy = run.generate(PROMPTS, max_new_tokens=15)
    sample = lambda seed, **cut: run.generate(PROMPTS, max_new_tokens=15, sample=True, seed=seed, **cut)  # noqa: E731
    assert sample(1) == sample(1) and sample(1) != sample(2)
    assert sample(1, temperature=1.5) != sample(1)
    assert sample(1, top_k=1) == sample(2, top_p=1e-6) == greedy
    assert run.generate(PROMPTS[:1], max_new_tokens=15, beam=3)[0].startswith(PROMPTS[0])
    assert run.speed.sentences == 1 and 0 < run.speed.tokens <= 15
    assert run.generate([PROMPTS[1]], sample=True, seed=1, first_line=2) == sample(1)[1:2]  # (seed, line) draws


def test_a_model_file_generates_the_runs_text_frozen_weights_resident_or_drawn_on_the_fly(runs, tmp_path):
    run_command(export.main, [runs["lm"], str(tmp_path / "model.safetensors")])
    expected = load_run(runs["lm"]).generate(PROMPTS, max_new_tokens=10, beam=2)
    for frozen in ("resident", "on-the-fly"):
        assert load_run(tmp_path / "model.safetensors", frozen=frozen).generate(PROMPTS, max_new_tokens=10,
                                                                                beam=2) == expected, frozen


def test_unconditional_and_output(runs, tmp_path):
    out = tmp_path / "texts.txt"
    run_command(generate.main, [runs["lm"], "--unconditional", "3", "--sample", "--seed", "7", "--output", str(out),
                                "--max-new-tokens", "8"])  # fmt: skip
    texts = out.read_text().splitlines()
    assert len(texts) == 3 and len(set(texts)) > 1  # each line its own draw
    fresh = subprocess.run([sys.executable, "-m", "frozen_sweep.generate", runs["lm"], "--unconditional", "3",
                            "--sample", "--max-new-tokens", "8"], capture_output=True, text=True, cwd=ROOT,
                           timeout=120)  # fmt: skip
    seed = re.match(r"sampling with --seed (\d+)\n", fresh.stderr).group(1)
    run_command(generate.main, [runs["lm"], "--unconditional", "3", "--sample", "--seed", seed, "--output", str(out),
                                "--max-new-tokens", "8"])  # fmt: skip
    assert out.read_text() == fresh.stdout  # the seed it said repeats its sample


@pytest.mark.parametrize("args, message", [
    (["--top-k", "3"], "top_k is a sampling setting: allowed with sample (--sample) only"),
    (["--sample", "--top-p", "1.5"], "top_p 1.5: allowed: 0 < top_p ≤ 1"),
    (["--sample", "--beam", "2"], "beam 2 with sample: allowed: one or the other"),
    (["--max-new-tokens", "0"], "max_new_tokens 0: allowed: at least 1"),
    (["--unconditional", "0"], "--unconditional N: allowed: N ≥ 1"),
])  # fmt: skip
def test_bad_settings_stop_the_command_with_one_line(args, message, runs, capsys):
    with pytest.raises(SystemExit) as stop:
        run_command(generate.main, [runs["lm"], *args, "--input", "/dev/null"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith(f"error: {message}") and err.count("\n") == 1, err


def test_a_translation_run_is_refused_naming_what_to_use(runs, capsys):
    with pytest.raises(SystemExit) as stop:
        run_command(generate.main, [runs["mt"], "--input", "/dev/null"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    expected = "is a task.kind=translation run; generate takes task.kind=lm runs: use python -m frozen_sweep.translate"
    assert expected in err
