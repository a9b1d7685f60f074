"""Text from a language-model run: each prompt line continued (greedy, beam or sampled), its settings checked before
anything is generated, a sample repeatable from its seed."""

import hashlib
import secrets
from typing import Optional

import torch

from frozen_sweep.evaluate.generation import Sampling, continue_prompt
from frozen_sweep.use.errors import UsageError, check_lengths

MAX_NEW_TOKENS = 64


def sampling_settings(sample: bool, beam: int, temperature: Optional[float], top_k: Optional[int],
                      top_p: Optional[float], seed: Optional[int]) -> Optional[Sampling]:  # fmt: skip
    """The sampling settings (None: a search), checked; UsageError naming the argument and what is allowed."""
    if beam < 1:
        raise UsageError(f"beam {beam}: allowed: beam ≥ 1")
    if not sample:
        given = [name for name, value in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p),
                                          ("seed", seed)) if value is not None]  # fmt: skip
        if given:
            raise UsageError(f"{given[0]} is a sampling setting: allowed with sample (--sample) only")
        return None
    if beam != 1:
        raise UsageError(f"beam {beam} with sample: allowed: one or the other (sampling draws one hypothesis)")
    if temperature is not None and temperature <= 0:
        raise UsageError(f"temperature {temperature}: allowed: temperature > 0")
    if top_k is not None and top_k < 1:
        raise UsageError(f"top_k {top_k}: allowed: top_k ≥ 1")
    if top_p is not None and not 0 < top_p <= 1:
        raise UsageError(f"top_p {top_p}: allowed: 0 < top_p ≤ 1")
    if seed is not None and not 0 <= seed < 2**31:
        raise UsageError(f"seed {seed}: allowed: 0 ≤ seed < 2**31")
    return Sampling(1.0 if temperature is None else temperature, top_k, top_p)


def generate_lines(run, prompts: list[str], max_new_tokens: int, beam: int, sampling: Optional[Sampling],
                   seed: Optional[int], source: str, first_line: int = 1) -> tuple[list[str], int]:  # fmt: skip
    """Each prompt followed by its continuation, as one text (an empty prompt: a text from bos alone), and the tokens
    generated. Line N is sampled with a generator seeded by (seed, N), so a line's sample does not depend on the
    lines around it; no seed: a fresh one. A prompt too long for the model's positions: as `run.too_long` says."""
    if max_new_tokens < 1:
        raise UsageError(f"max_new_tokens {max_new_tokens}: allowed: at least 1")
    positions = run.config.model.max_positions
    ids = run.vocab.encode_batch(prompts)
    run.truncated += check_lengths(ids, positions - 2, source, f"model.max_positions={positions}, less bos and one "
                                   "new token", first_line, run.too_long)  # fmt: skip
    seed = fresh_seed() if seed is None else seed
    generator = torch.Generator(run.device)
    texts, generated = [], 0
    for number, prompt in enumerate(ids, start=first_line):
        generator.manual_seed(line_seed(seed, number))
        specials = run.vocab.specials
        new = continue_prompt(run.model, torch.tensor([[*specials.prefix, *prompt]], device=run.device), max_new_tokens,
                              specials.eos,
                              beam, sampling, generator)  # fmt: skip
        texts.append(run.vocab.decode(prompt + new))
        generated += len(new)
    return texts, generated


def fresh_seed() -> int:
    return secrets.randbelow(2**31)


def line_seed(seed: int, number: int) -> int:
    """The seed line `number` is sampled with: (seed, number) mixed into the 32 bits a CPU generator keeps."""
    return int.from_bytes(hashlib.sha256(f"{seed} {number}".encode()).digest()[:4], "little")
