"""An altered model file is refused by every command, naming what differs: a flipped bit in a trainable weight or in
the vocabulary, a changed or mistyped config value in the metadata, any byte at all. A real micro run's export."""

import subprocess
import sys

import pytest

from frozen_sweep import classify, export, score, translate
from frozen_sweep.use.command_line import run_command
from frozen_sweep.weights.integrity import IntegrityError, check_checksums, write_checksums
from frozen_sweep.weights.model_file import VOCAB_TENSOR, ModelFileError, read_model_file
from tests.conftest import ROOT
from tests.helpers.model_files import edit_metadata, flip_bit

TRAINABLE = "encoder.layers.0.self_attn.q_proj.weight"


def _config_edit(old: str, new: str):
    def edit(metadata: dict) -> dict:
        assert old in metadata["config"]
        return metadata | {"config": metadata["config"].replace(old, new, 1)}

    return edit


CORRUPTIONS = {  # how the file is altered → what the refusal names
    "trainable_weight": (lambda p: flip_bit(p, TRAINABLE, 3, 6), f"stored tensor {TRAINABLE} does not match"),
    "vocabulary": (lambda p: flip_bit(p, VOCAB_TENSOR, 200, 0), f"stored tensor {VOCAB_TENSOR} does not match"),
    "config_value": (lambda p: edit_metadata(p, _config_edit("beam: 2", "beam: 5")),
                     "metadata key config does not match its SHA-256"),
    "max_positions": (lambda p: edit_metadata(p, _config_edit("max_positions: 256", "max_positions: 128")),
                      "metadata key config does not match its SHA-256"),
    "mistyped_config_key": (lambda p: edit_metadata(p, _config_edit("beam: 2", "beem: 2")),
                            "metadata key config does not match its SHA-256"),
    "mistyped_metadata_key": (lambda p: edit_metadata(p, lambda m: {k.replace("config", "confg"): v
                                                                    for k, v in m.items()}),
                              "metadata key config is missing; it has confg instead"),
}  # fmt: skip


@pytest.fixture
def exported(finished_runs, tmp_path):
    path = tmp_path / "model.safetensors"
    run_command(export.main, [str(finished_runs["mt"]), str(path)])
    return path


@pytest.mark.parametrize("case", CORRUPTIONS)
def test_every_command_refuses_an_altered_file_naming_what_differs(case, exported, finished_runs, capsys):
    alter, expected = CORRUPTIONS[case]
    alter(exported)
    source = str(finished_runs["corpus"] / "test.es")
    for main in (translate.main, score.main, classify.main, export.main):
        output = exported.parent / "out"
        with pytest.raises(SystemExit) as stop:
            run_command(main, [str(exported), *(["--input", source] if main is not export.main else []),
                               str(output) if main is export.main else f"--output={output}"])  # fmt: skip
        message = capsys.readouterr().err
        assert stop.value.code == 2 and message.count("\n") == 1 and expected in message, (main, message)
        assert message.startswith(f"error: {exported}: ") and not output.exists()


def test_a_mistyped_metadata_key_is_one_line_and_exit_2_not_a_traceback(exported, finished_runs):
    CORRUPTIONS["mistyped_metadata_key"][0](exported)
    out = subprocess.run([sys.executable, "-m", "frozen_sweep.translate", str(exported)], input=b"el perro\n",
                         capture_output=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert out.returncode == 2 and out.stdout == b"" and out.stderr.count(b"\n") == 1, out.stderr
    assert b"Traceback" not in out.stderr


def test_any_altered_byte_is_refused(exported):
    read_model_file(exported)  # as written: reads
    data = exported.read_bytes()
    header_end = 8 + int.from_bytes(data[:8], "little")
    # the length, 300 bytes spread over the header (names, shapes, offsets, metadata, hashes), 100 over the tensors
    positions = [*range(8), *range(8, header_end, header_end // 300), *range(header_end, len(data), len(data) // 100)]
    for position in positions:
        altered = bytearray(data)
        altered[position] ^= 1 << (position % 8)
        exported.write_bytes(bytes(altered))
        with pytest.raises(ModelFileError):
            read_model_file(exported)
            pytest.fail(f"byte {position} of {len(data)} altered, yet the file was read")


def test_an_exported_directorys_checksums_name_an_altered_or_added_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "sub" / "weights.bin").write_bytes(b"\x00\x01")
    write_checksums(tmp_path)
    check_checksums(tmp_path)
    (tmp_path / "sub" / "weights.bin").write_bytes(b"\x00\x03")
    with pytest.raises(IntegrityError, match="file sub/weights.bin does not match its SHA-256"):
        check_checksums(tmp_path)
    (tmp_path / "sub" / "weights.bin").write_bytes(b"\x00\x01")
    (tmp_path / "extra.txt").write_text("")
    with pytest.raises(IntegrityError, match="file extra.txt was never written to it"):
        check_checksums(tmp_path)
