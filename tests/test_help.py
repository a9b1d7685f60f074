"""`python -m frozen_sweep --help`: the project's own text through Hydra's help template, not Hydra's generic one."""

import subprocess
import sys


def test_help_lists_the_groups_launchers_collector_and_examples(tmp_path):
    mine = tmp_path / "conf" / "model"
    mine.mkdir(parents=True)
    (mine / "my_model.yaml").write_text("defaults:\n  - demo\n\nname: my_model\n")  # a user's preset
    proc = subprocess.run(
        [sys.executable, "-m", "frozen_sweep", "--help", "--config-dir", str(tmp_path / "conf"), "freeze=emb"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    text = proc.stdout
    assert "powered by Hydra" not in text and "schema" not in text
    assert "freeze: which components stay frozen" in text and "*emb, emb_att" in text  # the choice in use
    assert "my_model" in text and "paper_base_bible" in text and "*local_gpus, slurm" in text
    for section in ("hydra/launcher=slurm:", "python -m frozen_sweep.collect outputs/", "dry_run=true", "--cfg job"):
        assert section in text
    examples = text.split("== Examples ==")[1].split("== Flags ==")[0]
    assert examples.count("python -m frozen_sweep") >= 3
    assert "--multirun,-m" in text  # Hydra's flags still listed
    assert not list(tmp_path.glob("outputs"))
