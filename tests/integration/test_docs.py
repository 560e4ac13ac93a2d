"""The documentation site builds with warnings as errors, shows every public module and no cross-reference
left unprocessed, the tutorial notebook runs end to end, and the pages name only commands and files that
exist.

Without the docs extra (mkdocs and its plugins) the site's tests are skipped, unless
``THERMOPYLAE_REQUIRE_DOCS=1`` (CI sets it), where a missing plugin fails them.
"""

from __future__ import annotations

import importlib
import os
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


# A Sphinx role left in a docstring (mkdocstrings shows it as typed): :func:`x`, :class:`x`, ... The
# site renders the backticks as <code>, so the HTML is read both ways.
RAW_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|type|ref|doc):(?:`|<code>)")
PACKAGES = [ROOT / "thermopylae_env", ROOT / "agents" / "thermopylae_agents"]


def _require_docs_plugin(module: str) -> None:
    """Skip without ``module`` (part of the docs extra); with ``THERMOPYLAE_REQUIRE_DOCS=1``, fail instead."""
    try:
        importlib.import_module(module)
    except ImportError:
        if os.environ.get("THERMOPYLAE_REQUIRE_DOCS") == "1":
            pytest.fail(f"THERMOPYLAE_REQUIRE_DOCS=1 but {module} is not installed (the docs extra)")
        pytest.skip(f"{module} is not installed (the docs extra)")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once with warnings as errors (an unresolved cross-reference is one). Not quiet:
    ``mkdocs build -q`` drops the warnings before strict mode counts them, and passes."""
    for module in ("mkdocs", "mkdocstrings_handlers.python", "material", "mkdocs_jupyter"):
        _require_docs_plugin(module)
    site = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    warnings = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("WARNING")]
    assert done.returncode == 0 and not warnings, "\n".join(warnings) or done.stderr[-3000:]
    return site


def test_docs_site_builds_strictly_with_the_api_reference(site):
    # The API reference comes from the docstrings: the env's Gymnasium sections, the safe loader.
    environments = (site / "api" / "environments" / "index.html").read_text()
    assert "Observation Space" in environments and "Version History" in environments
    assert "load_safe_policy" in (site / "api" / "safe_policy" / "index.html").read_text()


def test_site_shows_no_raw_sphinx_role(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        found = RAW_ROLE.findall(page.read_text())
        assert not found, (page.relative_to(site).as_posix(), found[:5])


# What Markdown shows as typed when a docstring is written in reStructuredText: a paragraph ending in the
# "::" of a literal block, a simple table's "==== ====" border, a directive such as ".. warning::".
RST_LEFTOVER = re.compile(r"::\s*</p>|<p>={3,} |<p>\s*\.\. [a-z]+::")


def test_site_shows_no_restructuredtext_leftovers(site):
    for page in sorted(site.rglob("*.html")):
        found = RST_LEFTOVER.findall(page.read_text())
        assert not found, (page.relative_to(site).as_posix(), found[:5])


def test_docstrings_and_comments_hold_no_sphinx_role():
    # The site renders only the documented modules; the source check covers every module. Rewrite roles
    # as autorefs links: [`title`][full.path.of.object].
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            found = RAW_ROLE.findall(path.read_text(encoding="utf-8"))
            assert not found, (path.relative_to(ROOT).as_posix(), found[:5])


# A cross-reference that Markdown left as typed (``[title][identifier]`` or ``[identifier][]``): where the
# reference syntax does not apply (after a code span, in some table cells) autorefs never sees it, so the
# strict build does not warn, and the page shows the brackets.
RAW_REFERENCE = re.compile(r"\[[^\[\]\n]{1,300}\]\[(?:[A-Za-z_][\w.]*)?\]")


def raw_cross_references(html: str) -> list[str]:
    """The unprocessed cross-references in the text of a page: outside code blocks, scripts and styles,
    and outside a code span that holds a whole example (``<code>[`x`][y]</code>``)."""
    html = re.sub(r"<(pre|script|style)\b.*?</\1>", "", html, flags=re.S)
    html = re.sub(r"<code\b[^>]*>[^<]*\]\[[^<]*</code>", "", html)
    return RAW_REFERENCE.findall(re.sub(r"<[^>]+>", "", html))


def test_the_raw_reference_check_finds_typed_brackets_and_not_code():
    assert raw_cross_references("<p>[<code>CoopGame</code>][thermopylae_env.coop.rules.CoopGame] plays</p>") \
        == ["[CoopGame][thermopylae_env.coop.rules.CoopGame]"]
    assert raw_cross_references("<td><code>x</code>[<code>thermopylae_env.actions</code>][]</td>") == \
        ["[thermopylae_env.actions][]"]
    assert raw_cross_references('<pre><code>table[i][j]</code></pre><code>d[k][n]</code>'
                                "<style>[class*=bp3][readonly] {}</style><p>[a link](x.md) [1, 2]</p>") == []


def test_site_shows_no_raw_cross_reference(site):
    found = {page.relative_to(site).as_posix(): raw_cross_references(page.read_text())
             for page in sorted(site.rglob("*.html"))}
    assert not {page: refs for page, refs in found.items() if refs}


def _public_modules() -> list[str]:
    """Every module of both packages whose dotted name has no part starting with ``_`` (packages too)."""
    found = []
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            parts = list(path.relative_to(package.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if not any(part.startswith("_") for part in parts):
                found.append(".".join(parts))
    return found


def test_every_public_module_is_on_an_api_page():
    shown = {name for page in (ROOT / "docs" / "api").glob("*.md")
             for name in re.findall(r"^::: *([\w.]+)", page.read_text(encoding="utf-8"), re.M)}
    modules = _public_modules()
    assert "thermopylae_agents.players" in modules and "thermopylae_env.duel.env" in modules
    missing = [module for module in modules if module not in shown]
    assert not missing, "public modules on no docs/api page (add a `::: module` line): " + ", ".join(missing)


def test_the_duel_side_envs_list_the_members_they_inherit(site):
    page = (site / "api" / "environments" / "index.html").read_text()
    for side in ("DuelGreekEnv", "DuelPersianEnv"):
        for member in ("reset", "step", "render", "action_masks"):
            assert f'id="thermopylae_env.duel.env.{side}.{member}"' in page, (side, member)


def test_cross_references_are_links(site):
    # mkdocs-autorefs turns [`CoopGame`][thermopylae_env.coop.rules.CoopGame] into a link to the object's
    # anchor; an unresolved one fails the strict build, so links present means they were written.
    engines = (site / "api" / "engines" / "index.html").read_text()
    assert 'href="#thermopylae_env.coop.state.CoopState"' in engines
    assert 'href="../environments/#thermopylae_env.actions.as_seed"' in (
        site / "api" / "vector" / "index.html").read_text()


def test_tutorial_page_shows_the_notebook_with_its_outputs(site):
    page = (site / "tutorial" / "index.html").read_text()
    assert "MaskablePPO" in page  # the code cells
    assert "trained for 8192 steps" in page and "game over" in page  # their committed outputs
    assert "against the shipped Persian" in page


def test_duel_env_reference_describes_the_env(site):
    page = (site / "api" / "environments" / "index.html").read_text()
    duel = page[page.index('id="thermopylae_env.duel.env.DuelEnv"'):]
    assert 'id="thermopylae_env.duel.env.DuelGreekEnv"' in duel
    assert 'id="thermopylae_env.duel.env.DuelPersianEnv"' in duel
    for section in ("Action Space", "Observation Space", "Rewards", "Episode End", "Arguments"):
        assert section in duel, section
    assert 'id="thermopylae_env.duel.env.DuelEnv.step"' in duel  # the inherited members too
    vector = (site / "api" / "vector" / "index.html").read_text()
    assert 'id="thermopylae_env.duel.vector.DuelVectorEnv"' in vector


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
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*")
               if p.suffix in {".md", ".ipynb"}}
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
        named = set(re.findall(r"(?<!\w)scripts/([A-Za-z0-9_]+\.(?:py|sh))", page.read_text()))
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
        named = re.findall(r"`benchmarks/((?:results/)?[\w.]+\.(?:jsonl|json|md))`", page.read_text())
        for name in set(named):
            assert (ROOT / "benchmarks" / name).is_file(), (page.name, name)


# ------------------------------------------------------------ the flags that the pages and docstrings use

# The console scripts and the two files of scripts/ that run a subcommand.
_RUNS = {"thermopylae-train": "train", "thermopylae-evaluate": "evaluate",
         "thermopylae-export-policy": "export", "thermopylae-exploitability": "exploitability",
         "thermopylae-coop-bound": "bound",
         "thermopylae-render-game": "render", "thermopylae-train-rllib": "rllib",
         "thermopylae-ppo-native": "ppo-native", "thermopylae-duel-table": "duel-table",
         "scripts/train.py": "train", "scripts/evaluate.py": "evaluate"}
_COMMAND = re.compile(r"(?<![\w/.-])(thermopylae(?:-[a-z-]+)?|scripts/(?:train|evaluate)\.py|"
                      r"python -m thermopylae_agents)(?![\w/-])")
# Commands quoted as they were run: the generated tables (written from the result files) and the model
# cards' provenance (written from the policy descriptions) record the command lines of their day.
_RECORDS = re.compile(r"<!-- (generated: [\w-]+|provenance) -->.*?<!-- end (generated|provenance) -->", re.S)


def _option_strings() -> dict[str, set[str]]:
    """Each command line (``play``, ``rllib train``, ...) and the flags its parser knows."""
    import argparse
    import importlib

    from thermopylae_agents.cli.app import COMMANDS, build_parser

    flags: dict[str, set[str]] = {}
    todo = [("", build_parser())]
    todo += [(name, importlib.import_module(module).build_parser(name))
             for name, (module, _) in COMMANDS.items()]
    while todo:
        name, parser = todo.pop()
        known = flags.setdefault(name, set())
        for action in parser._actions:
            known.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {sub}".strip(), child) for sub, child in action.choices.items()
                         if not (name == "" and sub in COMMANDS)]
    for name in [n for n in flags if " " in n]:  # `thermopylae rllib --x` may name a flag of either
        flags[name.split()[0]] |= flags[name]
    return flags


def _command_lines(text: str) -> list[tuple[str, str]]:
    """``(command, text of its arguments)`` for every command line in ``text``: to the closing backtick
    of inline code, else to the end of the line (over trailing backslashes), without a ``#`` comment."""
    found = []
    text = _RECORDS.sub("", text)
    for match in _COMMAND.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if text[line_start:match.start()].count("`") % 2:  # inline code
            end = text.find("`", match.end())
        else:
            end = match.end()
            while (newline := text.find("\n", end)) >= 0 and text[:newline].rstrip().endswith("\\"):
                end = newline + 1
            end = text.find("\n", end)
        rest = text[match.end():end if end >= 0 else len(text)].split(" #")[0]
        words = rest.split()
        command = _RUNS.get(match.group(1)) or (words.pop(0) if words else "")
        if words and command == "rllib" and words[0] in ("train", "sweep"):
            command = f"rllib {words[0]}"
        found.append((command, rest))
    return found


def _unknown_flags(path: Path, flags: dict[str, set[str]]) -> list[str]:
    wrong = []
    for command, rest in _command_lines(path.read_text(encoding="utf-8")):
        if command not in flags:  # not a subcommand: prose, the package's name, an env id
            continue
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", rest):
            if flag not in flags[command] | {"--help", "--version"}:
                wrong.append(f"{path.relative_to(ROOT)}: thermopylae {command} {flag}")
    return wrong


def _sources() -> list[Path]:
    pages = [ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md")),
             *sorted((ROOT / "agents" / "thermopylae_agents").rglob("*.md")),
             *sorted((ROOT / "scripts").iterdir())]
    return pages + [path for package in PACKAGES for path in sorted(package.rglob("*.py"))]


def test_the_pages_and_docstrings_use_only_flags_that_their_command_has():
    flags = _option_strings()
    assert {"play", "rllib train", "ppo-native"} <= set(flags)
    wrong = [line for path in _sources() for line in _unknown_flags(path, flags)]
    assert wrong == [], "\n".join(wrong)


def test_the_readme_uses_only_flags_that_their_command_has():
    assert _unknown_flags(ROOT / "README.md", _option_strings()) == []
