"""The documentation site builds with warnings as errors, the tutorial notebook runs end to end, and the pages
name only commands and files that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What scripts/ keeps; every other tool is a `thermopylae` subcommand or a file of benchmarks/.
SCRIPTS = {"train.py", "evaluate.py", "setup.sh", "main.sh", "test.sh"}


def _pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_docs_site_builds_strictly_with_the_api_reference(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The API reference comes from the docstrings: the env's Gymnasium sections, the safe loader.
    environments = (site / "api" / "environments" / "index.html").read_text()
    assert "Observation Space" in environments and "Version History" in environments
    assert "load_safe_policy" in (site / "api" / "safe_policy" / "index.html").read_text()


def test_every_docs_page_is_in_the_navigation():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def pages(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for value in node.values():
                yield from pages(value)
        else:
            for value in node:
                yield from pages(value)

    listed = set(pages(config["nav"]))
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk == listed


@pytest.mark.slow
def test_tutorial_notebook_runs_and_shows_every_step():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("sb3_contrib")
    notebook = nbformat.read(ROOT / "docs" / "tutorial.ipynb", as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    text = "\n".join(
        output.get("text", "")
        for cell in notebook.cells if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert "legal actions:" in text
    assert "trained for 8192 steps" in text
    assert "heuristic:" in text and "of 200 games" in text
    assert "game over" in text
    assert "against the shipped Persian" in text


def test_pages_name_only_the_scripts_that_scripts_keeps():
    for page in _pages():
        named = set(re.findall(r"scripts/([A-Za-z0-9_]+\.(?:py|sh))", page.read_text()))
        assert named <= SCRIPTS, (page.name, named - SCRIPTS)
        assert all((ROOT / "scripts" / name).is_file() for name in named), page.name


def test_getting_started_lists_every_developer_experiment_of_benchmarks():
    page = (ROOT / "docs" / "getting_started.md").read_text()
    experiments = [p.name for p in (ROOT / "benchmarks").iterdir() if p.suffix in {".py", ".sh"}]
    assert experiments
    for name in experiments:
        assert f"`benchmarks/{name}`" in page, name


def test_result_files_named_in_the_pages_exist():
    for page in _pages():
        named = re.findall(r"`benchmarks/([\w.]+\.(?:jsonl|json|md))`", page.read_text())
        for name in set(named):
            assert (ROOT / "benchmarks" / name).is_file(), (page.name, name)
