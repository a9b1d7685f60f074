"""Every named task reads its dataset as the hub publishes it: a fixture typed with the features of the dataset's card
(tests/helpers/hub_layout.py), prepared through the task's own config with only task.dataset pointing at it."""

import pytest
from omegaconf import OmegaConf

from frozen_sweep.config import TaskKind
from frozen_sweep.data import load_task
from frozen_sweep.job.job_config import job_config
from tests.conftest import CONF, compose_config
from tests.helpers.hub_layout import cards, example_columns, write_hub_dataset

NAMED = sorted(path.stem for path in (CONF / "task").glob("*.yaml") if OmegaConf.load(path).get("dataset"))
MODEL = {TaskKind.translation: "micro", TaskKind.lm: "lm_micro"}  # the rest: an encoder


def test_the_named_hub_tasks_are_the_papers():
    assert {"wmt18_tren", "glue_sst2", "glue_mnli", "glue_stsb", "glue_cola", "wikitext103"} <= set(NAMED)


@pytest.mark.parametrize("name", NAMED)
def test_a_named_task_prepares_its_dataset_written_with_its_cards_features(name, tmp_path):
    task = OmegaConf.load(CONF / "task" / f"{name}.yaml")
    card = (task.dataset, task.dataset_config)
    assert card in cards(), f"task={name} reads {card}: give its card's features to tests/helpers/hub_layout.py"
    features = cards()[card]
    splits = {task.get("train_split", "train"): example_columns(features, 120, 0)}
    for role, size, seed in (("valid_split", 30, 1), ("test_split", 40, 2)):
        split = task.get(role, "validation" if role == "valid_split" else "test")
        if split:
            splits[split] = example_columns(features, size, seed)
    if "label" in features:  # GLUE: a test split whose labels are withheld, as published
        splits.setdefault("test", example_columns(features, 20, 3, withheld=True))
    root = write_hub_dataset(tmp_path / "hub", {task.dataset_config: splits}, features)
    kind = TaskKind(task.kind)
    held_out = ["task.valid_from_train=10"] if task.get("valid_from_train") else []
    cfg = compose_config(f"task={name}", f"task.dataset={root}", "task.vocab_size=60", "task.max_len=200",
                         f"task.cache_dir={tmp_path}", f"model={MODEL.get(kind, 'mlm_micro')}", *held_out)
    data = load_task(job_config(cfg, []).task)
    valid = {"train": 110, "valid": 10} if held_out else {"train": 120, "valid": 30}
    assert data.stats["sizes"] == valid | {"test": 40}
    assert data.stats["corpus"]["config"] == task.dataset_config
    if kind == TaskKind.classify:
        assert data.stats["labels"] == features["label"].names  # the ClassLabel's names in its order
