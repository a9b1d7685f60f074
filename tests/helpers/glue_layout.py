"""GLUE's task folders as `download_glue_data.py` ships them, written by the tests from the hub's columns of the same
rows (tests/helpers/hub_layout.py): each file with GLUE's own header and columns (CoLA's train and dev without a
header: source, label, original label or empty, sentence), the labels as GLUE writes them, and a split whose labels
are all withheld (-1) written as GLUE's unlabelled test file (an index and the texts)."""

from pathlib import Path

MNLI_PARSES = ["promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
               "sentence2_parse", "sentence1", "sentence2"]  # fmt: skip
PAIR = ["index", "sentence1", "sentence2"]
# config: (folder, the labelled files' header (None: CoLA's, none), the test file's, {hub column: file column}, label)
SHIPPED = {
    "cola": ("CoLA", None, ["index", "sentence"], {"sentence": "sentence"}, "label"),
    "sst2": ("SST-2", ["sentence", "label"], ["index", "sentence"], {"sentence": "sentence"}, "label"),
    "mrpc": ("MRPC", ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
             ["index", "#1 ID", "#2 ID", "#1 String", "#2 String"],
             {"sentence1": "#1 String", "sentence2": "#2 String"}, "Quality"),
    "qqp": ("QQP", ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"], ["id", "question1", "question2"],
            {"question1": "question1", "question2": "question2"}, "is_duplicate"),
    "stsb": ("STS-B", ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
                       "sentence2", "score"],
             ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2"],
             {"sentence1": "sentence1", "sentence2": "sentence2"}, "score"),
    "mnli": ("MNLI", ["index", *MNLI_PARSES, "label1", "gold_label"], ["index", *MNLI_PARSES],
             {"premise": "sentence1", "hypothesis": "sentence2"}, "gold_label"),
    "qnli": ("QNLI", ["index", "question", "sentence", "label"], ["index", "question", "sentence"],
             {"question": "question", "sentence": "sentence"}, "label"),
    "rte": ("RTE", [*PAIR, "label"], PAIR, {"sentence1": "sentence1", "sentence2": "sentence2"}, "label"),
    "wnli": ("WNLI", [*PAIR, "label"], PAIR, {"sentence1": "sentence1", "sentence2": "sentence2"}, "label"),
}  # fmt: skip
NAMED_LABELS = ("mnli", "qnli", "rte")  # labels written as the ClassLabel's names; the others' as "0" and "1"
MNLI_DEV_VOTES = ["label1", "label2", "label3", "label4", "label5"]  # MNLI's dev files: five annotators' labels
FILES = {"train": "train.tsv", "validation": "dev.tsv", "test": "test.tsv"}


def file_of(split: str) -> str:
    """GLUE's file of a hub split: validation_matched → dev_matched.tsv, test → test.tsv."""
    kind, _, suffix = split.partition("_")
    return FILES[kind].replace(".tsv", f"_{suffix}.tsv" if suffix else ".tsv")


def shipped_label(config: str, label, names) -> str:
    if names is None:
        return f"{label:.3f}"  # STS-B's scores: 3.800
    return names[label] if config in NAMED_LABELS else str(label)


def write_glue_folder(root: Path, config: str, splits: dict[str, dict[str, list]], features) -> Path:
    """`splits`: {hub split: its columns, as the hub's dataset has them} → root/<GLUE's folder>/<GLUE's files>."""
    folder, header, test_header, texts, label_column = SHIPPED[config]
    names = getattr(features["label"], "names", None)
    directory = Path(root) / folder
    directory.mkdir(parents=True, exist_ok=True)
    for split, columns in splits.items():
        labels = columns["label"]
        withheld = all(label == -1 for label in labels)
        names_here = test_header if withheld else header
        if config == "mnli" and split.startswith("validation"):
            names_here = ["index", *MNLI_PARSES, *MNLI_DEV_VOTES, "gold_label"]
        lines = [] if names_here is None or (config == "cola" and not withheld) else ["\t".join(names_here)]
        for i, label in enumerate(labels):
            cells = {column: columns[hub][i] for hub, column in texts.items()}
            shown = "" if withheld else shipped_label(config, label, names)
            if config == "cola" and not withheld:  # source, label, original label (an asterisk or empty), sentence
                lines.append("\t".join(["gj04", shown, "" if label else "*", cells["sentence"]]))
                continue
            row = [cells.get(name, shown if name in (label_column, *MNLI_DEV_VOTES) else str(i) if name in
                             ("index", "id") else f"{name}-{i}") for name in names_here]  # fmt: skip
            lines.append("\t".join(row))
        (directory / file_of(split)).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return directory
