"""Pretrained Hugging Face checkpoints imported: tiny LLaMA, Qwen2, Mistral and GPT-NeoX language models and BERT and
RoBERTa masked LMs with random weights, saved by transformers (safetensors) with a BPE tokenizer trained on KJV
verses beside them, give transformers' logits on verses their own tokenizer encodes, and transformers' parameters per
component; what our model cannot hold is refused in one line; a hub name is read offline from a hub cache populated
here, at the commit its branch names."""

import http.server
import json
import threading

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from frozen_sweep import pretrained
from frozen_sweep.data.checkpoint_files import PretrainedError
from frozen_sweep.weights.pretrained import load_pretrained
from tests.helpers.checkpoints import HEADS, VERSES, bpe_tokenizer, save_checkpoint

transformers = pytest.importorskip("transformers")

FAMILIES = {  # a case → its transformers class, and its config beyond TINY (and LLAMA_SHAPED for LLaMA's family)
    "llama": ("Llama", {"rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}}),
    "llama-biases-tied": ("Llama", {"attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True}),
    "qwen2": ("Qwen2", {"tie_word_embeddings": True}),
    "mistral": ("Mistral", {"sliding_window": None}),
    "mistral-window-as-long-as-the-model": ("Mistral", {"sliding_window": 256}),
    "gpt_neox": ("GPTNeoX", {"layer_norm_eps": 1e-6}),  # parallel attention and FFN, a quarter of a head rotated
    "gpt_neox-sequential-all-rotated": ("GPTNeoX", {"use_parallel_residual": False, "rope_parameters": {
        "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0}}),
    "bert": ("Bert", {"layer_norm_eps": 1e-12}),
    "roberta": ("Roberta", {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}),  # the tokenizer's pad
}  # fmt: skip


@pytest.fixture(scope="module")
def tokenizer():
    """A byte-level BPE trained on 400 verses, as the checkpoint's own tokenizer."""
    return bpe_tokenizer()


def hf_components(hf: nn.Module) -> dict[str, int]:
    """transformers' parameters per component, by its own modules: embeddings and the output projection, attention,
    MLP (BERT's intermediate and output), the rest (norms, BERT's head transform); a module within another decides."""
    owner = {}
    for name, module in hf.named_modules():  # a module before those within it
        kind = type(module).__name__
        output = isinstance(module, nn.Linear) and name.endswith(("lm_head", "decoder"))
        if isinstance(module, nn.Embedding) or output:
            component = "emb"
        elif kind.endswith("Attention"):
            component = "att"
        elif kind.endswith(("MLP", "Intermediate")) or (kind.endswith("Output") and not kind.endswith("SelfOutput")):
            component = "ffn"
        elif isinstance(module, nn.LayerNorm):
            component = "other"
        else:
            continue
        owner |= {id(p): component for p in module.parameters()}
    counts = {"emb": 0, "att": 0, "ffn": 0, "other": 0}
    for p in hf.parameters():  # a tied weight once
        counts[owner.get(id(p), "other")] += p.numel()
    return counts


@pytest.mark.parametrize("case", FAMILIES)
def test_an_imported_checkpoint_gives_transformers_logits_on_text_its_tokenizer_encodes(case, tokenizer, tmp_path):
    family, config = FAMILIES[case]
    hf = save_checkpoint(tmp_path, tokenizer, family, **config)
    model, model_cfg, info = load_pretrained(tmp_path)
    own = transformers.AutoTokenizer.from_pretrained(info["directory"])
    batch = own(VERSES[1000:1008], padding=True, return_tensors="pt")  # right-padded
    real = batch.attention_mask.bool()  # (B, T)
    with torch.no_grad():
        theirs = hf(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits  # (B, T, V)
        ours = model(None, batch.input_ids)  # an LM's tokens never read the padding after them; an encoder masks it
    assert real.sum() > 8 * 20 and not real.all()
    assert (theirs - ours)[real].abs().max() <= 1e-4
    layers = model_cfg.encoder_layers + model_cfg.decoder_layers
    assert (model_cfg.d_model, layers, info["architecture"]) == (32, 2, f"{family}For{HEADS.get(family, 'CausalLM')}")
    assert info["commit"] is None and model.training is False


@pytest.mark.parametrize("case", FAMILIES)
def test_an_imported_checkpoint_has_transformers_parameters_per_component(case, tokenizer, tmp_path):
    family, config = FAMILIES[case]
    hf = save_checkpoint(tmp_path, tokenizer, family, **config)
    model, _, info = load_pretrained(tmp_path)
    assert {c: n["total"] for c, n in info["params_by_component"].items() if c != "head"} == hf_components(hf)
    assert info["params_total"] == sum(p.numel() for p in hf.parameters())
    tied = config.get("tie_word_embeddings", family in HEADS)  # BERT's and RoBERTa's output is their embedding
    tokens = model.src_embed.tokens if model.is_encoder_only else model.tgt_embed.tokens
    assert (model.output.weight is tokens.weight) == tied
    assert all(p.requires_grad and p.dtype == torch.float32 for p in model.parameters())


def test_a_sharded_bfloat16_checkpoint_imports_as_transformers_loads_it(tokenizer, tmp_path):
    """As large checkpoints are published: bfloat16 weights in shards that model.safetensors.index.json names."""
    hf = save_checkpoint(tmp_path / "fp32", tokenizer, "Qwen2")
    hf.to(torch.bfloat16).save_pretrained(tmp_path, max_shard_size="20KB")
    assert len(list(tmp_path.glob("model-*-of-*.safetensors"))) > 1 and not (tmp_path / "model.safetensors").exists()
    theirs = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).eval()
    ours = load_pretrained(tmp_path)[0]
    ids = torch.tensor([tokenizer(VERSES[7]).input_ids])  # (1, T)
    with torch.no_grad():
        assert (theirs(ids).logits - ours.decode(ids)).abs().max() <= 1e-4
    assert {p.dtype for p in load_pretrained(tmp_path, dtype=torch.bfloat16)[0].parameters()} == {torch.bfloat16}


def test_a_sliding_window_no_shorter_than_the_positions_read_is_held(tokenizer, tmp_path):
    hf = save_checkpoint(tmp_path, tokenizer, "Mistral", sliding_window=16)
    model, model_cfg, _ = load_pretrained(tmp_path, max_positions=16)
    ids = torch.tensor([tokenizer(VERSES[3]).input_ids[:16]])  # (1, 16)
    with torch.no_grad():
        assert (hf(ids).logits - model.decode(ids)).abs().max() <= 1e-4
    assert model_cfg.max_positions == 16 and model.decoder.layers[0].self_attn.rotary.cos.shape[0] == 16
    with pytest.raises(PretrainedError, match="sliding_window=16, shorter than the 17 positions read"):
        load_pretrained(tmp_path, max_positions=17)


def rewrite_config(directory, **changes) -> None:
    path = directory / "config.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | changes))


def rewrite_weights(directory, drop=(), **add) -> None:
    tensors = {k: v for k, v in load_file(directory / "model.safetensors").items() if k not in drop} | add
    save_file(tensors, directory / "model.safetensors", metadata={"format": "pt"})


def pickle_only(directory) -> None:
    torch.save(load_file(directory / "model.safetensors"), directory / "pytorch_model.bin")
    (directory / "model.safetensors").unlink()


REFUSED = {  # a case → (the family and config saved, what is done to the saved directory, what the refusal says)
    "another architecture": ("Mistral", {}, lambda d: rewrite_config(d, architectures=["GPT2LMHeadModel"]),
                             r"architectures=\['GPT2LMHeadModel'\] cannot be imported"),
    "remote code": ("Llama", {}, lambda d: rewrite_config(d, auto_map={"AutoModelForCausalLM": "my.MyLM"}),
                    r"config.json names remote code \(auto_map: AutoModelForCausalLM\), which is never run"),
    "pickle only": ("Llama", {}, pickle_only, r"no model.safetensors .*: it holds pytorch_model.bin, a pickle"),
    "quantised": ("Llama", {}, lambda d: rewrite_config(d, quantization_config={"quant_method": "gptq"}),
                  r"quantised weights \(gptq\)"),
    "mistral's window": ("Mistral", {"sliding_window": 16}, None,
                         r"sliding-window attention \(sliding_window=16, shorter than the 256 positions read\)"),
    "qwen2's window": ("Qwen2", {"use_sliding_window": True, "sliding_window": 16, "max_window_layers": 0}, None,
                       r"Qwen2ForCausalLM with sliding-window attention"),
    "rope scaling": ("Llama", {"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}, None,
                     r"rope_type=linear \(rotary scaling"),
    "activation": ("Llama", {"hidden_act": "gelu"}, None, r"hidden_act=gelu"),
    "head width": ("Llama", {"head_dim": 16}, None, r"head_dim=16 with 4 heads is not hidden_size=32"),
    "biases": ("Llama", {"attention_bias": True}, None, r"attention_bias=True with mlp_bias=False"),
    "gpt-neox's activation": ("GPTNeoX", {"hidden_act": "gelu_new"}, None, r"hidden_act=gelu_new \(the FFN's GELU"),
    "gpt-neox without biases": ("GPTNeoX", {"attention_bias": False}, None, r"attention_bias=false \(biases are on"),
    "bert's relative positions": ("Bert", {"position_embedding_type": "relative_key"}, None,
                                  r"position_embedding_type=relative_key \(a table of absolute positions only\)"),
    "gpt-neox's odd rotary": ("GPTNeoX", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                                                              "partial_rotary_factor": 0.4}}, None,
                              r"3 rotary dimensions a head"),
    "untied, no head": ("Llama", {}, lambda d: rewrite_weights(d, drop=["lm_head.weight"]),
                        r"unties the output projection \(tie_word_embeddings=false\) but .* no lm_head.weight"),
    "tied, another head": ("Llama", {"tie_word_embeddings": True},
                           lambda d: rewrite_weights(d, **{"lm_head.weight": torch.ones(300, 32)}),
                           r"ties the output projection .* but lm_head.weight is not model.embed_tokens.weight"),
    "a tensor of no place": ("Llama", {},
                             lambda d: rewrite_weights(d, **{"model.layers.0.mlp.x.weight": torch.ones(1)}),
                             r"1 tensors have no place in LlamaForCausalLM .*\(model.layers.0.mlp.x.weight\)"),
    "a missing tensor": ("Llama", {}, lambda d: rewrite_weights(d, drop=["model.layers.1.mlp.up_proj.weight"]),
                         r"not those its config.json describes \(missing: model.layers.1.mlp.up_proj.weight\)"),
    "another model type": ("Qwen2", {}, lambda d: rewrite_config(d, architectures=["LlamaForCausalLM"]),
                           r"LlamaForCausalLM with model_type=qwen2 \(its own is llama\)"),
    "biases its config lacks": ("Qwen2", {}, lambda d: rewrite_config(d, architectures=["LlamaForCausalLM"],
                                                                       model_type="llama"),
                                r"describes \(unexpected: model.layers.0.self_attn.k_proj.bias, .*v_proj.bias\)"),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSED)
def test_what_our_model_cannot_hold_is_refused_in_one_line_naming_it(case, tokenizer, tmp_path):
    family, config, alter, message = REFUSED[case]
    save_checkpoint(tmp_path, tokenizer, family, **config)
    if alter is not None:
        alter(tmp_path)
    with pytest.raises(PretrainedError, match=message) as refused:
        load_pretrained(tmp_path)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("family, buffer", [("Llama", "model.layers.1.self_attn.rotary_emb.inv_freq"),
                                            ("GPTNeoX", "gpt_neox.layers.0.attention.masked_bias"),
                                            ("Bert", "bert.pooler.dense.weight")])  # fmt: skip
def test_buffers_and_unused_heads_older_checkpoints_saved_are_dropped(family, buffer, tokenizer, tmp_path):
    hf = save_checkpoint(tmp_path, tokenizer, family)
    rewrite_weights(tmp_path, **{buffer: torch.ones(4)})
    ids = torch.tensor([tokenizer(VERSES[5]).input_ids])  # (1, T)
    with torch.no_grad():
        assert (hf(ids).logits - load_pretrained(tmp_path)[0](None, ids)).abs().max() <= 1e-4


def test_tf_era_layernorm_names_are_read_as_transformers_reads_them(tokenizer, tmp_path):
    hf = save_checkpoint(tmp_path, tokenizer, "Bert")
    tensors = load_file(tmp_path / "model.safetensors")
    legacy = {name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): t
              for name, t in tensors.items()}  # fmt: skip
    save_file(legacy, tmp_path / "model.safetensors", metadata={"format": "pt"})
    assert "bert.embeddings.LayerNorm.gamma" in load_file(tmp_path / "model.safetensors")
    ids = torch.tensor([tokenizer(VERSES[9]).input_ids])  # (1, T)
    with torch.no_grad():
        assert (hf(ids).logits - load_pretrained(tmp_path)[0](None, ids)).abs().max() <= 1e-4


def test_a_learned_position_table_is_read_whole(tokenizer, tmp_path):
    save_checkpoint(tmp_path, tokenizer, "Bert")
    with pytest.raises(PretrainedError, match="max_positions=32: its position table has max_position_embeddings=256"):
        load_pretrained(tmp_path, max_positions=32)


@pytest.fixture
def hub_endpoint(monkeypatch):
    """The hub's address pointed at a server on this machine that records every request it gets (answering 404), in a
    process that was online when it imported huggingface_hub."""
    import huggingface_hub

    requests = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            self.send_error(404)

        do_HEAD = do_GET

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # as imported by an online process
    yield requests
    server.shutdown()


def test_a_hub_name_is_read_offline_from_the_hub_cache_at_its_commit_once_per_process(tokenizer, tmp_path, monkeypatch,
                                                                                         hub_endpoint):  # fmt: skip
    cache, commit, later = tmp_path / "hub", "0123456789abcdef0123456789abcdef01234567", "f" * 40
    repo = cache / "models--tiny--qwen"  # the hub cache's layout: refs/<branch> names snapshots/<commit>/
    save_checkpoint(repo / "snapshots" / commit, tokenizer, "Qwen2")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # set after huggingface_hub was imported
    _, _, info = load_pretrained("tiny/qwen", cache_dir=cache)
    assert (info["commit"], info["directory"]) == (commit, str(repo / "snapshots" / commit))
    (repo / "refs" / "main").write_text(later)  # the branch moves: this process keeps the commit it resolved
    assert load_pretrained("tiny/qwen", cache_dir=cache)[2]["commit"] == commit
    assert load_pretrained("tiny/qwen", revision=commit, cache_dir=cache)[2]["commit"] == commit
    with pytest.raises(PretrainedError, match=r"^tiny/absent \(revision main\) is not in the hub cache \(HF_HOME\) and "
                       r"HF_HUB_OFFLINE=1 is set: .* run `python -m frozen_sweep.pretrained tiny/absent`"):  # fmt: skip
        load_pretrained("tiny/absent", cache_dir=cache)
    assert hub_endpoint == []  # the hub was never asked
    with pytest.raises(PretrainedError, match="is a directory; a revision is for a hub name"):
        load_pretrained(repo / "snapshots" / commit, revision="main")


@pytest.mark.parametrize("case, keys", [("qwen2", {"norm": "rms", "qkv_bias": True, "bias": False}),
                                       ("roberta", {"norm": "post", "positions": "learned", "position_offset": 1})])
def test_the_command_prints_the_model_config_components_and_the_logit_difference(case, keys, tokenizer, tmp_path,
                                                                                   capsys):  # fmt: skip
    family, config = FAMILIES[case]
    save_checkpoint(tmp_path / case, tokenizer, family, **config)
    (tmp_path / "verses.txt").write_text("\n".join(VERSES[2000:2006]) + "\n")
    pretrained.main([str(tmp_path / case), "--compare", str(tmp_path / "verses.txt")])
    printed = json.loads(capsys.readouterr().out)
    assert printed["model"] | keys | {"d_model": 32} == printed["model"]
    assert printed["architecture"].startswith(family) and printed["params_by_component"]["att"]["total"] > 0
    assert 0 <= printed["max_abs_logit_difference"] <= 1e-4
