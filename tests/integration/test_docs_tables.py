"""The measured tables of README.md and docs/ are the committed results; the README is a landing page."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKE_DOCS = Path("docs") / "_scripts" / "make_docs.py"


def _make_docs(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / MAKE_DOCS), *args], capture_output=True, text=True, timeout=120, cwd=root
    )


def _copy_inputs(target: Path) -> None:
    """The generator (in docs/_scripts/), the pages and the result files it reads, outside the checkout."""
    (target / "benchmarks" / "results").mkdir(parents=True)
    for pattern in ("*.json", "*.jsonl"):
        for path in (ROOT / "benchmarks" / "results").glob(pattern):
            shutil.copy2(path, target / "benchmarks" / "results" / path.name)
    shutil.copytree(
        ROOT / "agents" / "thermopylae_agents" / "policies",
        target / "agents" / "thermopylae_agents" / "policies",
        ignore=shutil.ignore_patterns("*.zip", "*.npz", "*.png"),
    )
    shutil.copytree(ROOT / "docs", target / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "README.md", target / "README.md")


def test_generated_tables_match_the_committed_result_files():
    done = _make_docs(ROOT, "--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_names_each_stale_table_and_a_rewrite_restores_it(tmp_path):
    _copy_inputs(tmp_path)
    speed = tmp_path / "docs" / "speed.md"
    text = speed.read_text()
    assert "<!-- generated: speed -->" in text
    speed.write_text(re.sub(r"\| `single raw` \|[^\n]*", "| `single raw` | edited by hand | 1 | 1 |", text))
    readme = tmp_path / "README.md"
    readme.write_text(
        readme.read_text().replace("<!-- end generated -->", "| extra row |\n<!-- end generated -->", 1)
    )

    stale = _make_docs(tmp_path, "--check")
    assert stale.returncode == 1
    assert "docs/speed.md: speed" in stale.stderr
    assert "README.md: headline" in stale.stderr
    assert speed.read_text() != text  # --check writes nothing

    assert _make_docs(tmp_path).returncode == 0
    assert speed.read_text() == text
    assert _make_docs(tmp_path, "--check").returncode == 0


def test_every_generated_table_names_a_known_generator(tmp_path):
    _copy_inputs(tmp_path)
    page = tmp_path / "docs" / "results.md"
    page.write_text(page.read_text() + "\n<!-- generated: no-such-table -->\n<!-- end generated -->\n")
    done = _make_docs(tmp_path, "--check")
    assert done.returncode != 0
    assert "no-such-table" in done.stderr


def test_readme_is_a_landing_page_with_the_quick_start_near_the_top():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300
    first_python = next(number for number, line in enumerate(lines, 1) if line.strip() == "```python")
    assert first_python <= 60
    quick_start = "\n".join(lines[first_python : first_python + 40])
    assert 'gym.make("thermopylae/Coop-v0")' in quick_start
    assert "action_mask" in quick_start and "MaskablePPO" in quick_start


def test_readme_names_the_two_commands_and_links_only_existing_pages():
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/main.sh" in readme and "bash scripts/test.sh" in readme
    links = re.findall(r"\]\(((?:docs/|benchmarks/|seeds/)[^)#]+)", readme)
    assert links
    for link in links:
        assert (ROOT / link).is_file(), link


def _generated_names() -> list[str]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    marker = re.compile(r"<!-- generated: ([a-z0-9-]+) -->")
    return [name for page in pages for name in marker.findall(page.read_text())]


def test_every_generator_writes_a_table_on_some_page():
    listed = subprocess.run([sys.executable, str(ROOT / MAKE_DOCS), "--list"], capture_output=True, text=True,
                            check=True).stdout.split()
    assert listed and sorted(set(listed)) == sorted(set(_generated_names()))


def test_the_win_rate_tables_of_the_results_page_are_generated():
    results = (ROOT / "docs" / "results.md").read_text()
    for name in ("coop-solo", "coop-team-sizes", "coop-search-40", "duel-baselines", "duel-crossplay"):
        assert f"<!-- generated: {name} -->" in results, name
