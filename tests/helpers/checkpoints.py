"""Tiny pretrained checkpoints as transformers saves them: a model of a family with every weight drawn at random
(XConfig(hidden_size=32, ...), safetensors), and beside it its own tokenizer, a byte-level BPE trained on KJV verses
with the family's special tokens and post-processor (LLaMA's `<s> text`, GPT-NeoX's bare text, BERT's `[CLS] text
[SEP]`, RoBERTa's `<s> text </s>`), written by transformers' save_pretrained (tokenizer.json, tokenizer_config.json,
special_tokens_map.json)."""

import torch

from frozen_sweep.data.shipped import read_shipped, shipped_path

VERSES = [text for _, text in read_shipped(shipped_path("engKJV2006eb")) if text]
TINY = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "max_position_embeddings": 256}  # fmt: skip
LLAMA_SHAPED = {"num_key_value_heads": 2, "rms_norm_eps": 1e-6}
HEADS = {"Bert": "MaskedLM", "Roberta": "MaskedLM"}  # the transformers class's suffix: ForCausalLM for the others

# a family's tokenizer: its special tokens (in id order, first), what transformers names them, its post-processor
TOKENIZERS = {
    "plain": (["<pad>", "<s>", "</s>"], {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>"}, None),
    "llama": (["<unk>", "<s>", "</s>"], {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"},
              ("<s> $A", "<s> $A <s> $B")),
    "gpt_neox": (["<|endoftext|>", "<|padding|>"],
                 {"unk_token": "<|endoftext|>", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}, None),
    "bert": (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], {"pad_token": "[PAD]", "unk_token": "[UNK]",
             "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"},
             ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1")),
    "roberta": (["<s>", "<pad>", "</s>", "<unk>"], {"bos_token": "<s>", "pad_token": "<pad>",
                "eos_token": "</s>", "unk_token": "<unk>", "mask_token": "<mask>"}, "roberta"),
}  # fmt: skip
ADDED = {"roberta": ["<mask>"]}  # special tokens added after training: RoBERTa's <mask> is its last id (50264)


def bpe_tokenizer(family: str = "plain", vocab_size: int = 300):
    """A byte-level BPE trained on 400 verses with `family`'s special tokens (in their ids: RoBERTa's <mask> last)
    and post-processor, as transformers holds it (PreTrainedTokenizerFast)."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    specials, names, template = TOKENIZERS[family]
    bpe = Tokenizer(models.BPE(unk_token=names.get("unk_token")))
    bpe.pre_tokenizer, bpe.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    bpe.train_from_iterator(VERSES[:400], trainer)
    bpe.add_special_tokens(ADDED.get(family, []))
    specials = specials + ADDED.get(family, [])
    ids = {token: bpe.token_to_id(token) for token in specials}
    if template == "roberta":
        bpe.post_processor = processors.RobertaProcessing(("</s>", ids["</s>"]), ("<s>", ids["<s>"]))
    elif template:
        used = [token for token in specials if token in " ".join(template)]
        bpe.post_processor = processors.TemplateProcessing(single=template[0], pair=template[1],
                                                           special_tokens=[(t, ids[t]) for t in used])  # fmt: skip
    return transformers.PreTrainedTokenizerFast(tokenizer_object=bpe, **names)


def in_hub_cache(cache, name: str, directory, commit: str = "0" * 40) -> None:
    """Checkpoint `directory` as hub model `name` at `commit` in hub cache `cache`, as huggingface_hub lays it out
    (refs/main names snapshots/<commit>/)."""
    import shutil

    repo = cache / f"models--{name.replace('/', '--')}"
    shutil.copytree(directory, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)


def save_checkpoint(directory, tokenizer, family: str = "Llama", **config):
    """A transformers model of `family` with every weight drawn at random, saved with its tokenizer beside it."""
    import transformers

    llama_shaped = family in ("Llama", "Qwen2", "Mistral")
    shape = TINY | (LLAMA_SHAPED if llama_shaped else {}) | {"vocab_size": len(tokenizer)}
    hf_config = getattr(transformers, f"{family}Config")(**(shape | config))
    torch.manual_seed(0)
    hf = getattr(transformers, f"{family}For{HEADS.get(family, 'CausalLM')}")(hf_config).eval()
    with torch.no_grad():
        for p in hf.parameters():  # norms' gains and biases too: each tensor must land in its place
            p.normal_(std=0.3)
    hf.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return hf
