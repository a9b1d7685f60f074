"""A relearn job whose base is a pretrained checkpoint (a directory saved by `save_pretrained`, or a hub name): its
config adopts the checkpoint's model (config.json through the family's table, frozen_sweep.weights.pretrained) and
reads its corpus with the checkpoint's own tokenizer (task.vocab); its identity holds the checkpoint's commit and the
content hashes of the files it is read from. The weights are read by the job (frozen_sweep.study.relearn), not here.
"""

from omegaconf import DictConfig, OmegaConf

from frozen_sweep.config import ConfigError, TaskKind
from frozen_sweep.config.keys import override_key

PRETRAINED_ADOPTED = ("model", "freeze", "reservoir")  # from the checkpoint: its model, nothing frozen, no reservoir
READ_FILES = ("config.json", "model.safetensors", "model.safetensors.index.json")  # and the shards an index names


def checkpoint_model(source: str, where: str):
    """(model config, architecture) of checkpoint `source`, from its config.json alone; ConfigError naming `where`."""
    from frozen_sweep.data.checkpoint_files import PretrainedError, locate
    from frozen_sweep.weights.pretrained import model_config, read_config

    try:
        directory, _ = locate(source, None, None)
        family, hf_config, longest = read_config(directory, source, None)
    except PretrainedError as e:
        raise ConfigError(f"{where}={source}: {e}") from None
    return model_config(family, hf_config, longest), family.architecture


def adopted_checkpoint_model(cfg: DictConfig, overrides: list[str], key: str, adopted: tuple[str, ...], job: str):
    """(model config, architecture) of the checkpoint that base key `key` names, for `job` ("a relearn job"), whose
    overrides must leave the `adopted` groups and task.vocab to the checkpoint (ConfigError naming them)."""

    source = OmegaConf.select(cfg, key)
    own = [o for o in overrides if override_key(o).split(".")[0] in adopted]
    if own:
        raise ConfigError(f"{' '.join(own)}: {job} from a pretrained checkpoint takes its model from it "
                          f"({key}={source}); drop these overrides")  # fmt: skip
    if cfg.task.vocab not in (None, source):
        raise ConfigError(f"task.vocab={cfg.task.vocab}: {job} from a pretrained checkpoint reads its data with the "
                          f"checkpoint's tokenizer ({key}={source}); drop task.vocab")  # fmt: skip
    return checkpoint_model(source, key)


def adopt_pretrained_base(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """The relearn job's config with the checkpoint's model (all trainable, no reservoir) and task.vocab the
    checkpoint; its own task is the corpus it re-trains on, a language model's."""
    source = cfg.relearn.base_checkpoint
    model, architecture = adopted_checkpoint_model(cfg, overrides, "relearn.base_checkpoint", PRETRAINED_ADOPTED,
                                                   "a relearn job")  # fmt: skip
    if model.decoder_layers == 0:
        raise ConfigError(f"relearn.base_checkpoint={source}: {architecture} is an encoder; a pretrained relearn base "
                          "is a decoder (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM, GPTNeoXForCausalLM)")
    if TaskKind(cfg.task.kind) != TaskKind.lm:
        raise ConfigError(f"task={cfg.task.name} is task.kind={TaskKind(cfg.task.kind).value}: a pretrained decoder "
                          "re-trains as a language model (task=lm_bible_en, or task.kind=lm task.src_lang=null)")
    adopted = OmegaConf.merge(cfg, {"model": model})
    adopted.task.vocab = source
    return adopted


def checkpoint_identity(source: str, cache_dir) -> dict:
    """What the fingerprint holds of a pretrained base: its name, a hub name's commit, and the content hash of each
    file the import reads (config.json and the safetensors)."""
    import json

    from frozen_sweep.data.file_hashes import file_sha256
    from frozen_sweep.data.checkpoint_files import locate

    directory, commit = locate(source, None, None)
    names = [name for name in READ_FILES if (directory / name).is_file()]
    if "model.safetensors.index.json" in names:
        index = json.loads((directory / "model.safetensors.index.json").read_text(encoding="utf-8"))
        names += sorted(set(index["weight_map"].values()))
    return {"source": str(source), "commit": commit,
            "files": {name: file_sha256(directory / name, cache_dir) for name in names}}  # fmt: skip
