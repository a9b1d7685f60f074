"""The references of train_throughput.py's LLaMA-style decoder step, each of the same dimensions as ours: a causal
pre-norm stack of torch.nn.TransformerEncoderLayer (LayerNorm, GELU FFN of two matrices: torch.nn has no RMSNorm
block, SwiGLU, rotary or grouped-query attention), and Hugging Face's LlamaForCausalLM (the same block as ours). And
the key/value cache our decoding holds, to measure what grouped-query attention saves."""

import torch
from torch import nn

from frozen_sweep.data.specials import PAD
from frozen_sweep.model import Transformer


class TorchDecoder(nn.Module):
    """torch.nn's decoder-only language model: tied embeddings, causal pre-LayerNorm layers, no biases."""

    def __init__(self, m, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, m.d_model, padding_idx=PAD)
        self.dropout = nn.Dropout(m.dropout)
        layer = nn.TransformerEncoderLayer(m.d_model, m.heads, m.ffn_dim, m.dropout, activation="gelu",
                                           batch_first=True, norm_first=True, bias=m.bias)  # fmt: skip
        self.stack = nn.TransformerEncoder(layer, m.decoder_layers, norm=nn.LayerNorm(m.d_model, bias=m.bias),
                                           enable_nested_tensor=False)  # fmt: skip

    def forward(self, src, tgt_in):  # src unused: a language model reads tgt_in
        T = tgt_in.shape[1]
        causal = nn.Transformer.generate_square_subsequent_mask(T, device=tgt_in.device)
        return self.stack(self.dropout(self.embed(tgt_in)), mask=causal, is_causal=True) @ self.embed.weight.t()


def hf_llama(cfg, vocab: int):
    from transformers import LlamaForCausalLM

    from frozen_sweep.weights.llama_hf import llama_config

    model = LlamaForCausalLM(llama_config(cfg, vocab))

    def forward(src, tgt_in):
        return model(input_ids=tgt_in).logits

    return model, forward


def matrix_products(m, vocab: int, tokens: int, dtype=torch.float32):
    """A step's matrix products alone, at the shapes of the LLaMA-style step (every projection forward, its input's
    gradient and its weight's gradient; the tied output layer likewise) and in its precision (bf16 under autocast):
    the floor under any implementation of that step that uses these kernels."""
    kv = m.d_model // m.heads * m.kv_heads
    shapes = [(m.d_model, m.d_model), (m.d_model, kv), (m.d_model, kv), (m.d_model, m.d_model)]  # q, k, v, o
    shapes += [(m.d_model, m.ffn_dim), (m.d_model, m.ffn_dim), (m.ffn_dim, m.d_model)]  # gate, up, down
    shapes = shapes * m.decoder_layers + [(m.d_model, vocab)]
    operands = [tuple(torch.randn(*shape, dtype=dtype) for shape in ((tokens, i), (o, i), (tokens, o)))
                for i, o in shapes]  # fmt: skip

    def step(batch):
        for x, w, grad in operands:  # x (N, in), w (out, in), grad (N, out)
            x @ w.t(), grad @ w, grad.t() @ x  # forward, input's gradient, weight's gradient

    return step


@torch.no_grad()
def kv_cache_bytes(model: Transformer, length: int) -> int:
    """Bytes of the key/value caches after greedy decoding has read `length` positions of one sequence."""
    model.eval()
    caches = model.new_caches()
    model.decode(torch.full((1, length), 5), caches=caches)
    return sum(t.nbytes for cache in caches for t in cache.values())
