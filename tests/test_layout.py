"""The layout rule of docs/layout.md, on the code as it is: top-level modules are commands (or the package's face),
every stage imports only the stages its row of the table allows, and the model imports only torch and the schema."""

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "frozen_sweep"
COMMANDS = {"__init__", "__main__", "prepare", "collect", "translate", "score", "export", "classify", "average",
            "generate", "pretrained"}


def allowed_imports() -> dict[str, set[str]]:
    """The table "Which stage may import which" of docs/layout.md, read from the doc itself."""
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|$", (ROOT / "docs" / "layout.md").read_text(), re.M)
    stages = [stage for stage, _ in rows]
    table = {}
    for stage, cell in rows:
        if cell.startswith("every stage above"):
            table[stage] = set(stages[: stages.index(stage)]) - set(re.findall(r"`(\w+)`", cell))
        else:
            table[stage] = set(re.findall(r"\b([a-z]+)\b", cell.split("(")[0])) & set(stages)
    return table


def imports_of(path: Path) -> set[str]:
    """Every frozen_sweep module a file imports, at any depth of the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "frozen_sweep":
            names |= {f"frozen_sweep.{a.name}" for a in node.names} if node.module == "frozen_sweep" else {node.module}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.split(".")[0] == "frozen_sweep"}
    return names


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else None


def test_top_level_modules_are_commands():
    assert {p.stem for p in PACKAGE.glob("*.py")} == COMMANDS


def test_every_stage_is_in_the_table_and_has_an_init():
    table = allowed_imports()
    stages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name not in {"conf", "__pycache__"}}
    assert stages == set(table), "docs/layout.md's table and the subpackages differ"
    for stage in stages:
        assert (PACKAGE / stage / "__init__.py").is_file(), f"{stage}/ has no __init__.py: the wheel would miss it"


def test_stages_import_only_lower_stages():
    table = allowed_imports()
    climbs = []
    for path in PACKAGE.rglob("*.py"):
        stage = path.relative_to(PACKAGE).parts[0]
        if stage not in table:
            continue
        for module in imports_of(path):
            target = stage_of(module)
            if target not in (None, stage) and target not in table[stage]:
                climbs.append(f"{path.relative_to(ROOT)} imports {module} ({stage} → {target})")
    assert not climbs, "\n".join(climbs)


def test_the_model_imports_only_torch_and_the_schema():
    for path in (PACKAGE / "model").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                top = node.module.split(".")[0]
                assert top in {"torch", "math", "typing", "dataclasses", "frozen_sweep", "__future__"}, (path, node.module)
                if top == "frozen_sweep":
                    assert stage_of(node.module) in {"config", "model"}, (path, node.module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in {"torch", "math"}, (path, alias.name)
