"""Datasets in the Hugging Face hub's own layout, built by the tests (no network) the way the hub writes them: rows
through `datasets.Dataset.from_dict(columns, features=...)` with the features the dataset's card lists, saved by
`to_parquet` as a folder of parquet files per config and split (their `huggingface` metadata carries the features),
named in the README's YAML `configs:` as the hub's parquet conversions are, and loaded through the same
`datasets.load_dataset(path, config, split=...)` call that a hub name takes.

CARDS holds the features of every dataset a named task reads: a named task whose dataset is not here fails
tests/test_hub_cards.py, so none ships with a fixture the hub would not write."""

from pathlib import Path

from tests.conftest import toy_pairs


def _card(**columns):
    from datasets import Features

    return Features(columns)


def cards() -> dict[tuple[str, str], "datasets.Features"]:  # noqa: F821
    """(dataset, config) → its features, as the hub's dataset cards list them."""
    from datasets import ClassLabel, Translation, Value

    text, idx = Value("string"), Value("int32")

    def glue(*texts, names):
        return _card(**{name: text for name in texts}, label=ClassLabel(names=list(names)), idx=idx)

    return {
        ("wmt/wmt18", "tr-en"): _card(translation=Translation(languages=["tr", "en"])),
        ("nyu-mll/glue", "sst2"): glue("sentence", names=("negative", "positive")),
        ("nyu-mll/glue", "cola"): glue("sentence", names=("unacceptable", "acceptable")),
        ("nyu-mll/glue", "mnli"): glue("premise", "hypothesis", names=("entailment", "neutral", "contradiction")),
        ("nyu-mll/glue", "mrpc"): glue("sentence1", "sentence2", names=("not_equivalent", "equivalent")),
        ("nyu-mll/glue", "qqp"): glue("question1", "question2", names=("not_duplicate", "duplicate")),
        ("nyu-mll/glue", "qnli"): glue("question", "sentence", names=("entailment", "not_entailment")),
        ("nyu-mll/glue", "rte"): glue("sentence1", "sentence2", names=("entailment", "not_entailment")),
        ("nyu-mll/glue", "wnli"): glue("sentence1", "sentence2", names=("not_entailment", "entailment")),
        ("nyu-mll/glue", "stsb"): _card(sentence1=text, sentence2=text, label=Value("float32"), idx=idx),
        ("Salesforce/wikitext", "wikitext-103-raw-v1"): _card(text=text),
    }


def write_hub_dataset(root: Path, configs: dict[str, dict[str, dict]], features) -> Path:
    """`configs`: {config name: {split name: {column: values}}}, every split typed by `features` (datasets.Features,
    or {config name: its Features}: GLUE's tasks in one dataset) → root/<config>/<split>-00000-of-00001.parquet and
    README.md."""
    from datasets import Dataset, Features, disable_progress_bars

    disable_progress_bars()
    lines = ["---", "configs:"]
    for config, splits in configs.items():
        lines += [f"- config_name: {config}", "  data_files:"]
        for split, columns in splits.items():
            (root / config).mkdir(parents=True, exist_ok=True)
            typed = features if isinstance(features, Features) else features[config]
            Dataset.from_dict(columns, features=typed).to_parquet(root / config / f"{split}-00000-of-00001.parquet")
            lines += [f"  - split: {split}", f"    path: {config}/{split}-*"]
    (root / "README.md").write_text("\n".join([*lines, "---", "# a test dataset in the hub's layout", ""]))
    return root


def example_columns(features, n: int, seed: int, withheld: bool = False) -> dict[str, list]:
    """n rows of any card's features: the toy corpus's sentences as texts (a Translation's first language the toy
    source side), labels cycling through a ClassLabel's ids (all -1 if `withheld`, as GLUE's test splits), numbers
    0-5 in halves, idx counting up."""
    from datasets import ClassLabel, Translation, Value

    pairs = toy_pairs(n, seed)
    columns, texts = {}, 0
    for name, feature in features.items():
        if isinstance(feature, Translation):
            src, tgt = feature.languages
            columns[name] = [{src: s, tgt: t} for s, t in pairs]
        elif isinstance(feature, ClassLabel):
            columns[name] = [-1 if withheld else i % feature.num_classes for i in range(n)]
        elif name == "idx":
            columns[name] = list(range(n))
        elif feature == Value("string"):
            columns[name] = [pair[texts % 2] for pair in pairs]
            texts += 1
        else:  # a float label (STS-B's similarity)
            columns[name] = [-1.0 if withheld else (i % 11) / 2 for i in range(n)]
    return columns


def wmt_columns(n: int, seed: int, src: str = "es", tgt: str = "en") -> dict[str, list]:
    """WMT's layout: one `translation` column of {lang: text}, the toy corpus's pairs."""
    return {"translation": [{src: s, tgt: t} for s, t in toy_pairs(n, seed)]}


def translation_features(src: str = "es", tgt: str = "en"):
    """WMT's feature for a language pair, as wmt14/16/18's cards list it."""
    from datasets import Translation

    return _card(translation=Translation(languages=[src, tgt]))
