"""Check that a pretrained Hugging Face checkpoint imports, and fetch it into the hub cache where there is a network:

    python -m frozen_sweep.pretrained SOURCE [--revision REV] [--compare FILE]

SOURCE is a directory written by save_pretrained or a hub name (Qwen/Qwen2.5-0.5B); a hub name's branch or tag is
resolved to its commit, and its config, safetensors weights and tokenizer files are kept in the hub cache (HF_HOME),
where later imports read them offline (HF_HUB_OFFLINE=1). Prints what was imported as JSON: the commit, our model
config and the parameters per component (frozen_sweep.weights.pretrained.load_pretrained is the Python API).
--compare FILE also loads the transformers model (float32) and prints, for the lines of FILE encoded by the
checkpoint's own tokenizer (right-padded into one batch), the largest absolute difference between its logits and ours
at the real tokens.
"""

import argparse
import json
from pathlib import Path

import torch
from omegaconf import OmegaConf

from frozen_sweep.use import command_line
from frozen_sweep.use.errors import UsageError


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", metavar="SOURCE", help="a directory written by save_pretrained, or a hub name")
    p.add_argument("--revision", help="a hub name's branch, tag or commit (default: main)")
    p.add_argument("--compare", metavar="FILE", type=Path, help="lines of text: our logits against transformers'")
    p.add_argument("--max-positions", type=int, help="the longest sequence the model will read (default: "
                   "config.json's max_position_embeddings)")  # fmt: skip
    args = p.parse_args(argv)
    from frozen_sweep.data.checkpoint_files import PretrainedError
    from frozen_sweep.weights.pretrained import load_pretrained

    try:
        model, model_cfg, info = load_pretrained(args.source, args.revision, max_positions=args.max_positions)
    except PretrainedError as e:
        raise UsageError(str(e)) from None
    if args.compare is not None:
        info["max_abs_logit_difference"] = logit_difference(model, info, args.compare)
    print(json.dumps(info | {"model": OmegaConf.to_container(model_cfg, enum_to_str=True)}, indent=1))


def logit_difference(model, info: dict, text: Path) -> float:
    """The largest |our logit - the checkpoint's transformers class's| over the real tokens of `text`'s lines,
    right-padded into one batch."""
    import transformers

    directory = Path(info["directory"])
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    lines = [line for line in text.read_text(encoding="utf-8").splitlines() if line.strip()]
    batch = tokenizer(lines, padding=True, padding_side="right", return_tensors="pt")
    theirs = getattr(transformers, info["architecture"]).from_pretrained(directory, dtype=torch.float32).eval()
    with torch.no_grad():
        ours = model(None, batch.input_ids)  # an encoder masks its padding: the tokenizer's must be the config's
        difference = theirs(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits - ours  # (B, T, V)
    return difference[batch.attention_mask.bool()].abs().max().item()


if __name__ == "__main__":
    command_line.run_command(main)
