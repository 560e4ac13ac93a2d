"""The generated tables of docs/results.md (and the duel files' table of the policies' README)."""

from __future__ import annotations

from common import (
    POLICIES,
    RESULTS,
    ROOT,
    ci,
    count_text,
    crossplay_players,
    load_json,
    md_table,
    p_text,
    paired_result,
    pct,
    signed_ci,
)


def _team_rows(players: int, result: dict, policy: str) -> list[list[str]]:
    """One row per agent of a paired co-op evaluation, with the policy's paired difference to it."""
    rows = []
    for entry in result["results"]:
        agent = entry["agent"]
        versus = ""
        if agent != policy:
            pair = paired_result(result, policy, agent)
            versus = (
                f"{100 * pair['difference']:+.2f} points {signed_ci(*pair['ci95'])}, "
                f"p = {p_text(pair['p_value'])}"
            )
        rows.append(
            [
                str(players),
                f"`{agent}`",
                f"{entry['games']:,}",
                pct(entry["win_rate"]),
                ci(*entry["ci95"]),
                f"{entry['mean_turns']:.1f}",
                versus,
            ]
        )
    return rows


def _team_table(files: dict[int, str]) -> str:
    """The rows of each team size's file of ``benchmarks/results/``; ``coop_{N}p_maskable_ppo`` is the policy
    of ``N`` players, ``coop_maskable_ppo`` the solo one, whose table has no team column."""
    rows = []
    for players, name in files.items():
        policy = "coop_maskable_ppo" if players == 1 else f"coop_{players}p_maskable_ppo"
        rows += _team_rows(players, load_json(RESULTS / name), policy)
    header = ["team", "player", "games", "win rate", "95% interval", "mean turns", "policy - player, paired"]
    align = ["---", "---", "---:", "---:", "---", "---:", "---"]
    if set(files) == {1}:
        return md_table(header[1:], align[1:], [row[1:] for row in rows])
    return md_table(header, align, rows)


def coop_solo_table() -> str:
    """Random, the heuristic and the shipped solo policy on the same deals (``coop_solo_eval.json``)."""
    return _team_table({1: "coop_solo_eval.json"})


def coop_team_sizes_table() -> str:
    """Random, the heuristic and each team-size policy on the same deals (``coop_{N}p_eval.json``)."""
    return _team_table({players: f"coop_{players}p_eval.json" for players in (2, 3, 4)})


def coop_search_table() -> str:
    """The search expert, the team policy and the heuristic on the first 40 deals of 2 and 4 players."""
    return _team_table({players: f"coop_{players}p_search_40.json" for players in (2, 4)})


def duel_baselines_table() -> str:
    """The built-in duel players against each other (``thermopylae duel-table``, ``duel_table.json``)."""
    result = load_json(RESULTS / "duel_table.json")
    rows = [
        [
            f"`{row['greek']}`",
            f"`{row['persian']}`",
            f"{row['games']:,}",
            pct(row["greek_win_rate"]),
            ci(*row["greek_win_rate_ci95"]),
            f"{row['mean_turns']:.1f}",
        ]
        for row in result["results"]
    ]
    return md_table(
        ["Greek", "Persian", "games", "Greek wins", "95% interval", "mean turns"],
        ["---", "---", "---:", "---:", "---", "---:"],
        rows,
    )


def duel_crossplay_table() -> str:
    """Greek win rates of every shipped Greek against every shipped Persian (``policies/duel_eval.json``)."""
    greeks, persians, cells = crossplay_players(load_json(POLICIES / "duel_eval.json"))
    rows = []
    for greek in greeks:
        row = [f"`{greek}`"]
        for persian in persians:
            cell = cells[greek, persian]
            row.append(f"{pct(cell['win_rate'])} {ci(*cell['ci95'])}")
        rows.append(row)
    return md_table(["Greek \\ Persian"] + [f"`{p}`" for p in persians], ["---"] * (len(persians) + 1), rows)


def duel_vec_eval_table() -> str:
    """Each retrained duel file against the one it replaced, on the same deals (``duel_vec_eval.json``)."""
    result = load_json(POLICIES / "duel_vec_eval.json")
    rows = []
    for side in ("greek", "persian"):
        block = result[side]
        for name, player in block["players"].items():
            rows.append([side, name, str(block["games"]), pct(player["win_rate"])])
    return md_table(
        ["side", "player", "games", "win rate against the other side's heuristic"],
        ["---", "---", "---:", "---:"],
        rows,
    )


def coop_search_yardstick_table() -> str:
    """The search expert with random, the heuristic and each team size's policy on the same deals
    (``benchmarks/results/coop_search_yardstick.json``, joined by ``benchmarks/search_yardstick.py``)."""
    result = load_json(RESULTS / "coop_search_yardstick.json")
    rows = []
    for players, size in sorted(result["team_sizes"].items(), key=lambda item: int(item[0])):
        rows += _team_rows(int(players), size, "search")
    header = ["team", "player", "games", "win rate", "95% interval", "mean turns", "search - player, paired"]
    return md_table(header, ["---", "---", "---:", "---:", "---", "---:", "---"], rows)


def versus_search_table() -> str:
    """A distilled policy and its start policy paired with the default search on the yardstick's deals, and
    the distill run's rounds (``benchmarks/results/expert_iteration_versus_search.json``, written by
    ``benchmarks/versus_search.py``)."""
    result = load_json(RESULTS / "expert_iteration_versus_search.json")
    distill = result["distill"]
    minutes = distill["wall_seconds"] / 60
    text = (f"{result['title']}. The distill run read the settings of `{distill['settings_file']}` "
            f"({count_text(distill['dataset_decisions'])} labelled states, {minutes:.0f} min); the policies "
            f"played `{result['evaluation_command']}`, paired by `benchmarks/versus_search.py` "
            f"({result['date']}, commit {result['commit']}).\n\n")
    rounds = [[str(r["round"]), f"{r['beta']:.3g}", count_text(r["decisions"]),
               f"{r['agreement_before_training']:.3f} -> {r['agreement_after_training']:.3f}",
               pct(r["held_out_win_rate"])] for r in distill["rounds"]]
    text += md_table(["round", "beta", "states labelled", "agreement with the search (before -> after)",
                    f"held-out win rate ({distill['config']['eval_games']:,} deals)"],
                   ["---:", "---:", "---:", "---", "---:"], rounds) + "\n"
    pairs = {pair["a"]: pair for pair in result["paired"]}
    rows = []
    for row in result["results"]:
        pair = pairs.get(row["agent"])
        rows.append([f"`{row['agent']}`", f"{row['wins']:,} / {row['games']:,}", pct(row["win_rate"]),
                     ci(*row["ci95"]),
                     "" if pair is None else f"{100 * pair['difference']:+.2f}",
                     "" if pair is None else signed_ci(*pair["ci95"]),
                     "" if pair is None else p_text(pair["p_value"])])
    header = ["player", "wins", "win rate", "95% interval", "minus the search (points)", "95% interval",
              "McNemar p"]
    return text + md_table(header, ["---", "---:", "---:", "---", "---:", "---", "---:"], rows)


def _search_spec(row: dict) -> str:
    """The agent spec that plays a ``search_effort.py`` setting."""
    spec = f"search:{row['n_determinizations']},{row['rollouts']}"
    return spec + (f",rollout={row['rollout_policy']}" if row.get("rollout_policy") else "")


def strongest_players_table() -> str:
    """Per team size, the measured search setting with the highest win rate on its effort file's deals,
    as the agent spec that plays it, with its cost per move and its paired difference to the default."""
    files = [(1, RESULTS / "search_effort.json")] + [(n, RESULTS / f"search_effort_{n}p.json")
                                                     for n in (2, 3, 4)]
    rows = []
    for players, path in files:
        if not path.exists():
            continue
        result = load_json(path)
        best = max(result["settings"], key=lambda row: row["win_rate"])
        pair = best["paired_with_reference"]
        same = best["setting"] == result["reference"]
        rows.append([str(players), f"`{_search_spec(best)}`", f"{best['games']:,}", pct(best["win_rate"]),
                     ci(*best["ci95"]), f"{1000 * best['cpu_s_per_move']:.1f}",
                     "(the default)" if same else f"{100 * pair['difference']:+.2f} "
                     f"{signed_ci(*pair['ci95'])}, p = {p_text(pair['p_value'])}",
                     f"`{path.relative_to(ROOT).as_posix()}`"])
    header = ["team", "agent spec", "deals", "win rate", "95% interval", "CPU ms/move",
              "minus the default search (points), paired", "result file"]
    return md_table(header, ["---:", "---", "---:", "---:", "---", "---:", "---", "---"], rows)
