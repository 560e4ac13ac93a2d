"""The shipped policy files: convert them to safetensors, and write their model cards' generated parts.

    python benchmarks/policy_files.py convert        # NAME.json + .npz -> NAME.json (v2) + .safetensors
    python benchmarks/policy_files.py cards          # rewrite each NAME.md's generated parts
    python benchmarks/policy_files.py cards --check  # exit 1, naming each stale card (what the tests run)

``convert`` rewrites every shipped pair of format version 1 as version 2 (the arrays compared bit for bit
after writing), with the provenance that is known: the decks of the game (names and hashes), the commit
that shipped the file and the package version (from git), the training command (as its model card gives
it). The commit that trained a file was never recorded: it stays ``"unknown"``. The ``.npz`` files are
left for ``git rm``.

``cards`` writes each card's YAML front matter (``thermopylae_agents.policies.model_card``: with
``huggingface_hub``'s ``ModelCardData`` where it is installed), whose ``model-index`` holds one result per
game setting of the committed result files (``benchmarks/results/coop_*_eval.json``; ``duel_eval.json`` of the
policies' folder: one per opponent, the env's default opponent first), each with ``mean_reward`` (the mean
and standard deviation of the episode returns, +1 a win and -1 a loss) and the win rate and number of
deals, and the list of the *Training* section (from the description's ``provenance``), between
``<!-- provenance -->`` and ``<!-- end provenance -->``, and the measured tables between ``<!-- measured -->``
and ``<!-- end measured -->`` (the co-op evaluations and the search's first deals, ``duel_vec_eval.json``, the
cross-play and ``benchmarks/results/exploitability.json``). Nothing measured is typed by hand. ``--check``
compares the front matter as data (PyYAML reads it), so a card written with or without ``huggingface_hub`` is
not stale for the other writer's spacing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "agents")]

from thermopylae_agents.evaluation.stats import wilson_interval  # noqa: E402
from thermopylae_agents.policies.model_card import (  # noqa: E402
    card_text,
    game_results,
    game_setting,
    intended_use,
    limitations,
    split_card,
    training_text,
)
from thermopylae_agents.policies.provenance import policy_provenance  # noqa: E402
from thermopylae_agents.policies.safe_policy import (  # noqa: E402
    POLICY_DIR,
    read_description,
    shipped_policy_names,
    upgrade_policy,
)

# The command that trained each shipped file, as its model card ("How it was trained") gives it.
TRAINING_COMMANDS = {
    "coop_maskable_ppo": "python scripts/train.py coop --seed 0 --out runs/coop_fast_s0",
    "coop_2p_maskable_ppo": "nice -n 15 python scripts/train.py coop --config "
    "agents/thermopylae_agents/configs/coop_2p.yaml --seed 0 --timesteps 2000000 --eval-freq 1000000 "
    "--eval-episodes 1000 --no-report --out runs/coop_2p_s0",
    "coop_3p_maskable_ppo": "nice -n 15 python scripts/train.py coop --config "
    "agents/thermopylae_agents/configs/coop_3p.yaml --seed 0 --timesteps 2000000 --eval-freq 1000000 "
    "--eval-episodes 1000 --no-report --out runs/coop_3p_s0",
    "coop_4p_maskable_ppo": "nice -n 15 python scripts/train.py coop --config "
    "agents/thermopylae_agents/configs/coop_4p.yaml --seed 0 --timesteps 2000000 --eval-freq 1000000 "
    "--eval-episodes 1000 --no-report --out runs/coop_4p_s0",
    "duel_greek_maskable_ppo": "python scripts/train.py duel-greek --seed 0",
    "duel_persian_maskable_ppo": "python scripts/train.py duel-persian --seed 0",
    "selfplay_greek_maskable_ppo": "python scripts/train.py selfplay --seed 0",
    "selfplay_persian_maskable_ppo": "python scripts/train.py selfplay --seed 0",
}
# The committed evaluation of each co-op policy (the same deals for every player of one file).
COOP_RESULTS = {
    "coop_maskable_ppo": "benchmarks/results/coop_solo_eval.json",
    "coop_2p_maskable_ppo": "benchmarks/results/coop_2p_eval.json",
    "coop_3p_maskable_ppo": "benchmarks/results/coop_3p_eval.json",
    "coop_4p_maskable_ppo": "benchmarks/results/coop_4p_eval.json",
}
DUEL_RESULTS = "agents/thermopylae_agents/policies/duel_eval.json"
# The search expert on the first deals of a team size's evaluation (too slow for all of them).
COOP_SEARCH_RESULTS = {
    "coop_2p_maskable_ppo": "benchmarks/results/coop_2p_search_40.json",
    "coop_4p_maskable_ppo": "benchmarks/results/coop_4p_search_40.json",
}
DUEL_VEC_RESULTS = "agents/thermopylae_agents/policies/duel_vec_eval.json"
EXPLOITABILITY_RESULTS = "benchmarks/results/exploitability.json"
# Each retrained duel file's name in duel_vec_eval.json (which also holds the files it replaced).
DUEL_VEC_LABELS = {
    "duel_greek_maskable_ppo": "PPO Greek (new)",
    "selfplay_greek_maskable_ppo": "self-play Greek (new)",
    "duel_persian_maskable_ppo": "PPO Persian (new)",
    "selfplay_persian_maskable_ppo": "self-play Persian (new)",
}
_START, _END = "<!-- provenance -->\n", "<!-- end provenance -->"
MEASURED_START, MEASURED_END = "<!-- measured -->\n", "<!-- end measured -->"


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def _shipped_commit(name: str) -> str:
    """The commit that last changed the content of the shipped zip (moves not counted)."""
    path = f"agents/thermopylae_agents/policies/{name}.zip"
    commits = _git("log", "--follow", "--diff-filter=AM", "--format=%h", "--", path).split()
    return commits[0] if commits else "unknown"


def _package_version(commit: str) -> str:
    """The package version of ``commit``, when the version has never changed in the history (so that the
    checkout that trained the file, whichever it was, had it too); otherwise ``unknown``."""
    changes = _git("log", "-G__version__ = ", "--format=%h", "--", "thermopylae_env/__init__.py").split()
    if commit == "unknown" or len(changes) != 1:
        return "unknown"
    for line in _git("show", f"{commit}:thermopylae_env/__init__.py").splitlines():
        if line.startswith("__version__ = "):
            return line.split("=", 1)[1].strip().strip("\"'")
    return "unknown"


def convert() -> int:
    for name in shipped_policy_names():
        json_path = POLICY_DIR / f"{name}.json"
        description = read_description(json_path)
        if description["format_version"] != 1:
            print(f"{name}: already version {description['format_version']}")
            continue
        shipped = _shipped_commit(name)
        provenance = policy_provenance(
            description["env_id"], training_commit="unknown", training_command=TRAINING_COMMANDS[name],
            package_version=_package_version(shipped), shipped_in_commit=shipped)
        written, arrays = upgrade_policy(json_path, POLICY_DIR / name, provenance)
        print(f"{name}: {written.name} + {arrays.name} (arrays identical to {name}.npz); git rm {name}.npz")
    return 0


def _read(path: str) -> dict[str, Any]:
    return json.loads((ROOT / path).read_text(encoding="utf-8"))


def _coop_results(name: str, description: dict[str, Any]) -> list[dict[str, Any]]:
    results = _read(COOP_RESULTS[name])
    (row,) = [r for r in results["results"] if r["agent"] == name]
    options = description.get("env_options", {})
    last = row["base_seed"] + row["games"] - 1
    return game_results(description["env_id"], game_setting(description["env_id"], options), row["games"],
                        row["wins"], win_rate_name=f"win rate on {row['games']} paired deals",
                        dataset_args={"num_players": options.get("num_players", 1),
                                      "results_file": COOP_RESULTS[name]},
                        win_rate_args={"seeds": f"{row['base_seed']}..{last}", "ci95": row["ci95"]})


def _duel_results(name: str, description: dict[str, Any]) -> list[dict[str, Any]]:
    env_id = description["env_id"]
    greek = env_id.endswith("DuelGreek-v0")
    side, other = ("Greek", "Persian") if greek else ("Persian", "Greek")
    rows = [row for row in _read(DUEL_RESULTS)["results"]
            if (row["agent"] if greek else row["opponent"]) == name]
    # The env's own opponent (the heuristic) first: the leaderboard reads the first result.
    rows.sort(key=lambda row: (row["opponent"] if greek else row["agent"]) != "heuristic")
    results = []
    for row in rows:
        opponent = row["opponent"] if greek else row["agent"]
        # The duel has no draws (the Greeks win at the empty Persian deck, the Persians otherwise), so the
        # Persian side wins the games the Greek side does not.
        wins = row["wins"] if greek else row["games"] - row["wins"]
        results += game_results(env_id, game_setting(env_id, opponent=opponent), row["games"], wins,
                                win_rate_name=f"{side} win rate against the {other} {opponent}",
                                dataset_args={"results_file": DUEL_RESULTS},
                                win_rate_args={"opponent": opponent})
    return results


def eval_results(name: str, description: dict[str, Any]) -> list[dict[str, Any]]:
    """The results of a shipped policy's ``model-index`` (as ``huggingface_hub.EvalResult`` fields), from
    the committed result files."""
    return _coop_results(name, description) if name in COOP_RESULTS else _duel_results(name, description)


def _pct(rate: float, signed: bool = False) -> str:
    return f"{100 * rate:+.2f}%" if signed else f"{100 * rate:.2f}%"


def _ci(low: float, high: float, signed: bool = False) -> str:
    return f"[{_pct(low, signed)}, {_pct(high, signed)}]"


def _p(value: float) -> str:
    return "0" if value == 0 else f"{value:.3g}"


def _md_table(header: list[str], align: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"


_ALIGN = ["---", "---:", "---:", "---"]
_COOP_PLAYERS = {"random": "random legal", "heuristic": "heuristic (`CoopHeuristic`)",
                 "search": "search expert (`search`, full strength)"}


def _coop_pair(name: str, pair: dict[str, Any]) -> list[str]:
    """A paired row, turned so that this policy comes first (``a - b`` becomes ``b - a``)."""
    a, b, difference, (low, high) = pair["a"], pair["b"], pair["difference"], pair["ci95"]
    if b == name:
        a, b, difference, low, high = b, a, -difference, -high, -low
    return [f"{a} - {b}", f"{pair['games']:,}", _pct(difference, True), _ci(low, high, signed=True),
            _p(pair["p_value"])]


def _coop_tables(name: str, path: str) -> str:
    """A co-op result file's players and paired differences as two tables, this policy's row in bold."""
    results = _read(path)
    players = []
    for row in results["results"]:
        label = _COOP_PLAYERS.get(row["agent"], f"`{row['agent']}`")
        label = "**this policy**" if row["agent"] == name else label
        players.append([label, f"{row['games']:,}", _pct(row["win_rate"]), _ci(*row["ci95"])])
    pairs = [_coop_pair(name, pair) for pair in results["paired"]]
    return (f"`{path}` ({results['title']}), greedy play, Wilson 95% intervals:\n\n"
            + _md_table(["player", "games", "win rate", "95% interval"], _ALIGN, players)
            + "\nPaired on the same deals (difference of win rates with its Newcombe 95% interval, McNemar's "
            "exact p):\n\n"
            + _md_table(["pair", "deals", "difference", "95% interval", "p"],
                        ["---", "---:", "---:", "---", "---:"], pairs))


def _coop_measured(name: str) -> str:
    text = "The same deals for every player: " + _coop_tables(name, COOP_RESULTS[name])
    if name in COOP_SEARCH_RESULTS:
        text += ("\nThe search expert at full strength, too slow for every deal, on the first deals of the "
                 "same seeds, with this policy and the heuristic on the same deals (too few deals to rank "
                 "them): "
                 + _coop_tables(name, COOP_SEARCH_RESULTS[name]))
    return text


def _paired_verdict(low: float, high: float) -> str:
    if low > 0:
        return "the paired interval is above zero"
    if high < 0:
        return "the paired interval is below zero"
    return "the paired interval includes zero"


def _duel_vec(name: str, side: str, other: str) -> str:
    """This file and the players it was compared with, against the other side's heuristic, same deals."""
    block = _read(DUEL_VEC_RESULTS)[side.lower()]
    rows = []
    for player, entry in block["players"].items():
        low, high = wilson_interval(entry["wins"], block["games"])
        label = f"**{player} (this file)**" if player == DUEL_VEC_LABELS[name] else player
        rows.append([label, f"{entry['wins']:,}", _pct(entry["win_rate"]), _ci(low, high)])
    first, last = block["seeds"]
    text = (f"Against the heuristic {other} on the same {block['games']:,} deals (game keys {first:,} to "
            f"{last:,} of the native vector engine, greedy play; {side} win rates, Wilson 95%), "
            f"`python benchmarks/duel_vec_eval.py` (`{DUEL_VEC_RESULTS}`; \"previous\" is the file this one "
            "replaced):\n\n"
            + _md_table([f"{side} player", "wins", "win rate", "95% interval"], _ALIGN, rows)
            + "\nPaired on the same deals (difference of win rates, Newcombe 95% interval, McNemar's exact "
            "test):\n\n")
    pairs = [[f"{pair['a']} - {pair['b']}", f"{pair['games']:,}", _pct(pair["difference"], True),
              _ci(*pair["ci95"], signed=True), _p(pair["p_value"]), _paired_verdict(*pair["ci95"])]
             for pair in block["paired"] if pair["a"] == DUEL_VEC_LABELS[name]]
    return text + _md_table(["pair", "deals", "difference", "95% interval", "p", "so"],
                            ["---", "---:", "---:", "---", "---:", "---"], pairs)


def _duel_crossplay(name: str, side: str) -> str:
    """This file's win rates against every player of the other side in the shipped cross-play."""
    result = _read(DUEL_RESULTS)
    greek = side == "Greek"
    rows = []
    for row in result["results"]:
        if (row["agent"] if greek else row["opponent"]) != name:
            continue
        wins = row["wins"] if greek else row["games"] - row["wins"]  # the duel has no draws
        low, high = row["ci95"] if greek else (1 - row["ci95"][1], 1 - row["ci95"][0])
        opponent = row["opponent"] if greek else row["agent"]
        rows.append([f"`{opponent}`", f"{row['games']:,}", _pct(wins / row["games"]), _ci(low, high)])
    return (f"\nCross-play of the shipped files (`{DUEL_RESULTS}`, {result['date']}, commit "
            f"{result['commit']}; `docs/results.md`, \"Duel cross-play\"), {side} win rates:\n\n"
            + _md_table(["opponent", "deals", "win rate", "95% interval"], _ALIGN, rows))


def _exploitability(name: str, side: str) -> str:
    """The best response's win rate against this file and against the heuristic of the same side."""
    result = _read(EXPLOITABILITY_RESULTS)
    rows = {(row["frozen_player"], row["frozen_side"]): row for row in result["rows"]}
    mine, heuristic = rows[name, side.lower()], rows["heuristic", side.lower()]
    other = mine["best_response_side"].capitalize()
    pooled, reference = mine["pooled_final"], heuristic["pooled_final"]
    if pooled["ci95"][1] < reference["ci95"][0]:
        verdict = f"less exploitable than the heuristic {side} (intervals apart)"
    elif pooled["ci95"][0] > reference["ci95"][1]:
        verdict = f"more exploitable than the heuristic {side} (intervals apart)"
    else:
        verdict = f"level with the heuristic {side} (the intervals overlap)"
    seeds = ", ".join(str(seed) for seed in mine["seeds"])
    return (f"\n## Exploitability\n\nA best response ({other}: MaskablePPO warm-started from the "
            f"{mine['warm_start']} of its side, {mine['budget_timesteps']:,} steps, seeds {seeds}; "
            f"`{EXPLOITABILITY_RESULTS}`, measured at commit {mine['measured']['commit']}; "
            "`docs/strength.md`) "
            f"wins {_pct(pooled['win_rate'])} {_ci(*pooled['ci95'])} of {pooled['games']:,} evaluation games "
            f"against this file, against {_pct(reference['win_rate'])} {_ci(*reference['ci95'])} against the "
            f"heuristic {side}: this player is {verdict}.\n")


def measured_text(name: str, description: dict[str, Any]) -> str:
    """The generated part of a card's *Measured strength* section (and, for a duel file, its
    *Exploitability* section), from the committed result files."""
    if name in COOP_RESULTS:
        return _coop_measured(name)
    side = "Greek" if description["env_id"].endswith("DuelGreek-v0") else "Persian"
    other = "Persian" if side == "Greek" else "Greek"
    return _duel_vec(name, side, other) + _duel_crossplay(name, side) + _exploitability(name, side)


def _with_sections(name: str, body: str, description: dict[str, Any]) -> str:
    """The body with its *Training* section's generated list, its measured tables (between
    ``<!-- measured -->`` and ``<!-- end measured -->``), and the *Intended use* and *Limitations*
    sections added when missing (then kept as edited)."""
    if MEASURED_START in body:
        head, rest = body.split(MEASURED_START, 1)
        tail = rest.split(MEASURED_END, 1)[1]
        body = head + MEASURED_START + measured_text(name, description) + MEASURED_END + tail
    body = body.replace("## How it was trained\n", "## Training\n", 1)
    listing = f"{_START}{training_text(description)}{_END}"
    if _START in body:
        head, rest = body.split(_START, 1)
        body = head + listing + rest.split(_END, 1)[1]
    elif "## Training\n" in body:
        body = body.replace("## Training\n", f"## Training\n\n{listing}\n", 1)
    else:
        body = body.rstrip("\n") + f"\n\n## Training\n\n{listing}\n"
    extra = ""
    if "## Intended use\n" not in body:
        extra += f"## Intended use\n\n{intended_use(description)}\n"
    if "## Limitations\n" not in body:
        extra += f"## Limitations\n\n{limitations(description)}\n"
    if extra:
        body = body.replace("## Training\n", extra + "## Training\n", 1)
    return body


def _same_card(old: str, new: str) -> bool:
    """Whether two cards say the same: the same body, and front matter that reads as the same data."""
    (old_front, old_body), (new_front, new_body) = split_card(old), split_card(new)
    if old == new:
        return True
    if old_body != new_body or old_front is None or new_front is None:
        return False
    try:
        import yaml
    except ImportError:
        return False
    return yaml.safe_load(old_front) == yaml.safe_load(new_front)


def cards(check: bool) -> int:
    stale = []
    for name in shipped_policy_names():
        path = POLICY_DIR / f"{name}.md"
        description = read_description(POLICY_DIR / f"{name}.json")
        old = path.read_text(encoding="utf-8")
        _, body = split_card(old)
        new = card_text(description, _with_sections(name, body, description), name,
                        eval_results(name, description))
        if not _same_card(old, new):
            stale.append(name)
            if not check:
                path.write_text(new, encoding="utf-8")
    for name in stale:
        print(f"{'stale' if check else 'rewrote'} model card: {name}.md",
              file=sys.stderr if check else sys.stdout)
    return 1 if check and stale else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("convert", help="convert the shipped .npz pairs to .safetensors (format 2)")
    cards_parser = commands.add_parser("cards", help="write the model cards' front matter and training list")
    cards_parser.add_argument("--check", action="store_true", help="exit 1 when a card is stale")
    args = parser.parse_args(argv)
    return convert() if args.command == "convert" else cards(args.check)


if __name__ == "__main__":
    raise SystemExit(main())
