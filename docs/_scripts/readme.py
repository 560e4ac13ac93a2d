"""The generated table of README.md: the headline, one row per result with a link to its page."""

from __future__ import annotations

from common import (
    POLICIES,
    RESULTS,
    ci,
    count_text,
    crossplay_players,
    load_json,
    md_table,
    p_text,
    paired_result,
    pct,
    rows_by_name,
    signed_ci,
)
from duel_theory import small_duel


def _team_search_cell() -> str:
    """The headline's search-versus-policy cell of the team sizes (``coop_search_yardstick.json``)."""
    sizes = load_json(RESULTS / "coop_search_yardstick.json")["team_sizes"]
    parts = []
    for players in ("2", "3", "4"):
        size = sizes[players]
        policy = f"coop_{players}p_maskable_ppo"
        rates = {entry["agent"]: entry for entry in size["results"]}
        pair = paired_result(size, "search", policy)
        parts.append(f"{pct(rates['search']['win_rate'])} vs {pct(rates[policy]['win_rate'])}, paired "
                     f"{100 * pair['difference']:+.2f} {signed_ci(*pair['ci95'])}")
    return " / ".join(parts) + f" points, {sizes['2']['results'][0]['games']:,} deals each"


def _learner_speed_cell() -> str:
    doc = load_json(RESULTS / "ppo_speed_coop.json")
    medians = doc["medians"]
    fast, sb3 = medians["fast"]["steps_per_s"], medians["sb3"]["steps_per_s"]
    return (f"{count_text(fast)} vs {count_text(sb3)} env steps/s ({fast / sb3:.1f}x), {doc['date'][:10]}, "
            f"{doc['machine']['cpus']} CPUs")


def headline_table() -> str:
    """The README's headline: one row per result, each linking the page with its method and command."""
    coop = load_json(RESULTS / "coop_bound_agents_eval.json")
    rates = {entry["agent"]: entry for entry in coop["results"]}
    ppo, heuristic = rates["coop_maskable_ppo"], rates["heuristic"]
    pair = paired_result(coop, "coop_maskable_ppo", "heuristic")
    bound = load_json(RESULTS / "coop_bound.json")["bound"]
    _, _, cells = crossplay_players(load_json(POLICIES / "duel_eval.json"))
    learned = cells["heuristic", "duel_persian_maskable_ppo"]
    baseline = cells["heuristic", "heuristic"]
    exploit = {
        (row["frozen_player"], row["frozen_side"]): row["pooled_final"]
        for row in load_json(RESULTS / "exploitability.json")["rows"]
    }
    speed = rows_by_name(load_json(RESULTS / "engine_speed.json"))
    yardstick = load_json(RESULTS / "coop_search_yardstick.json")["team_sizes"]["1"]
    by_agent = {entry["agent"]: entry for entry in yardstick["results"]}
    search, search_ppo = by_agent["search"], by_agent["coop_maskable_ppo"]
    search_pair = paired_result(yardstick, "search", "coop_maskable_ppo")
    search_speed = load_json(RESULTS / "search_speed.json")["speed"][0]
    zoo = load_json(RESULTS / "rlzoo_coop.json")
    zoo_pair = paired_result(zoo, "rl_zoo3 PPO", "heuristic")
    zoo_ppo, zoo_heuristic = zoo["agents"]["rl_zoo3 PPO"], zoo["agents"]["heuristic"]
    medium = small_duel(load_json(RESULTS / "duel_small_games.json"), "medium")
    greek = medium["players"]["heuristic_greek"]["exploitability_bounds"]
    rows = [
        [
            "[Co-op solo, shipped MaskablePPO vs heuristic](docs/results.md#co-op-solo)",
            f"{pct(ppo['win_rate'])} vs {pct(heuristic['win_rate'])} on the same {ppo['games']:,} deals, "
            f"paired {100 * pair['difference']:+.2f} points {signed_ci(*pair['ci95'])}",
        ],
        [
            "[Co-op solo, the search expert vs the shipped MaskablePPO](docs/results.md"
            "#the-search-expert-on-thousands-of-deals)",
            f"{pct(search['win_rate'])} vs {pct(search_ppo['win_rate'])} on the same {search['games']:,} "
            f"deals, paired {100 * search_pair['difference']:+.2f} points "
            f"{signed_ci(*search_pair['ci95'])}, p = {p_text(search_pair['p_value'])}",
        ],
        [
            "[Co-op teams of 2 / 3 / 4, the search expert vs each team's shipped MaskablePPO](docs/results.md"
            "#the-search-expert-on-thousands-of-deals)",
            _team_search_cell(),
        ],
        [
            "[Co-op solo, rl_zoo3's plain PPO with the shipped file vs heuristic](docs/training.md"
            "#rl-baselines3-zoo)",
            f"{pct(zoo_ppo['win_rate'])} vs {pct(zoo_heuristic['win_rate'])} on the same "
            f"{zoo_heuristic['games']:,} deals, paired "
            f"{100 * zoo_pair['difference']:+.2f} points {signed_ci(*zoo_pair['ci95'])}",
        ],
        [
            "[Co-op solo, deck-clairvoyant upper bound](docs/coop_bound.md)",
            f"{pct(bound['mean'])} {ci(bound['low'], bound['high'])} on {bound['n']:,} deals",
        ],
        [
            "[Duel, learned vs heuristic Persian, vs the heuristic Greek](docs/results.md#duel-cross-play)",
            f"{pct(1 - learned['win_rate'])} vs {pct(1 - baseline['win_rate'])} of {learned['games']:,}",
        ],
        [
            "[Duel: a best response's win rate against the learned / heuristic Persian](docs/strength.md)",
            f"{pct(exploit['duel_persian_maskable_ppo', 'persian']['win_rate'])} vs "
            f"{pct(exploit['heuristic', 'persian']['win_rate'])}",
        ],
        [
            "[Duel, the reduced duel `medium` solved exactly (CFR+): the Greek's value, the heuristic "
            "Greek's exact exploitability](docs/duel_theory.md)",
            "[{:.4f}, {:.4f}] (returns in [-1, 1]); heuristic Greek {:.3f} to {:.3f}".format(
                *medium["game_value_bounds"], *greek),
        ],
        [
            "[Co-op search, compiled vs Python rollouts, same positions, same run]"
            "(docs/speed.md#the-co-op-search-python-and-compiled-rollouts)",
            f"{search_speed['compiled_cpu_ms']:.1f} vs {search_speed['python_cpu_ms']:.1f} CPU ms per solo "
            f"move ({search_speed['speedup_cpu']:.1f}x), same moves",
        ],
        [
            "[Co-op PPO, the fast learner vs SB3 MaskablePPO, same recipe network, same run]"
            "(docs/training.md#the-fast-learner)",
            _learner_speed_cell(),
        ],
        [
            "[Single co-op env vs RLCard's Leduc hold'em, same run](docs/speed.md)",
            f"{count_text(speed['single make']['steps_per_s'])} vs "
            f"{count_text(speed['peer rlcard leduc']['steps_per_s'])} steps/s",
        ],
        [
            "[Co-op native vector engine vs Pgx's Leduc hold'em (JAX, CPU), 8,192 games each, same run]"
            "(docs/speed.md)",
            f"{count_text(speed['native 8192 numba']['steps_per_s'])} vs "
            f"{count_text(speed['peer pgx leduc 8192']['steps_per_s'])} steps/s",
        ],
        [
            "[Duel engine, both sides, vs Pgx's Leduc hold'em, 8,192 games each, same run]"
            "(docs/speed.md#duel-vector-engine)",
            f"{count_text(speed['duel engine 8192 parallel']['steps_per_s'])} vs "
            f"{count_text(speed['peer pgx leduc 8192']['steps_per_s'])} steps/s",
        ],
    ]
    return md_table(["result (method and command behind the link)", "measured"], ["---", "---"], rows)
