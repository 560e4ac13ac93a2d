"""The documentation site builds with warnings as errors, and the tutorial notebook runs end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
