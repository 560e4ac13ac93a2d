"""The generated tables of docs/duel_theory.md: the reduced duels solved exactly."""

from __future__ import annotations

from common import RESULTS, count_text, load_json, md_table


def _deck(counts: list[int]) -> str:
    """A reduced deck as forces and kinds, e.g. ``10, 40, S`` (S strategy card, D discard card)."""
    names = ["10", "20", "30", "40", "50", "S1", "S2", "S3", "D"]
    return ", ".join(name for name, n in zip(names, counts, strict=True) for _ in range(n))


def duel_small_games_table() -> str:
    """Each reduced duel, its tree and its solution (``benchmarks/results/duel_small_games.json``)."""
    result = load_json(RESULTS / "duel_small_games.json")
    rows = []
    for member in result["members"]:
        config, tree, solver = member["config"], member["tree"], member["solver"]
        low, high = member["game_value_bounds"]
        rows.append([
            f"`{config['name']}`", _deck(config["greek"]), _deck(config["persian"]),
            f"{config['start_hand']} / {config['hand_limit']} / {config['start_tokens']}",
            count_text(tree["nodes"]),
            f"{count_text(tree['infosets']['greek'])} / {count_text(tree['infosets']['persian'])}",
            count_text(solver["iterations"]), f"{member['equilibrium']['nash_conv']:.1e}",
            f"[{low:+.4f}, {high:+.4f}]", f"{member['seconds']:.0f}",
        ])
    header = ["duel", "Greek deck", "Persian deck", "hand / limit / tokens", "tree nodes",
              "infosets G / P", "CFR+ iterations", "NashConv", "game value (Greek) in", "seconds"]
    return md_table(header, ["---"] * 4 + ["---:"] * 6, rows)


def duel_small_players_table() -> str:
    """The exact exploitability of the built-in players on each reduced duel (``duel_small_games.json``)."""
    result = load_json(RESULTS / "duel_small_games.json")
    rows = []
    for member in result["members"]:
        for name, report in member["players"].items():
            low, high = report["exploitability_bounds"]
            rows.append([f"`{member['config']['name']}`", name.replace("_", " "),
                         f"{report['return_against_best_response']:+.4f}",
                         f"[{round(low, 4) + 0.0:.4f}, {round(high, 4) + 0.0:.4f}]",
                         f"{report['return_against_equilibrium']:+.4f}"])
        for name, profile in member["profiles"].items():
            rows.append([f"`{member['config']['name']}`", f"both {name.replace('_', ' ')} (NashConv)", "",
                         f"{profile['nash_conv']:.4f}", ""])
    header = ["duel", "player", "its return against a best response", "exploitability in",
              "its return against the equilibrium"]
    return md_table(header, ["---", "---", "---:", "---:", "---:"], rows)


def small_duel(result: dict, name: str) -> dict:
    """The member ``name`` of ``duel_small_games.json``."""
    for member in result["members"]:
        if member["config"].get("name") == name:
            return member
    raise KeyError(f"no reduced duel named {name!r}")


def duel_small_mmd_table() -> str:
    """MMD against CFR+: iterations to each NashConv tolerance per reduced duel (``duel_small_mmd.json``)."""
    result = load_json(RESULTS / "duel_small_mmd.json")
    rows = []
    for member in result["members"]:
        for label, run in (("MMD (last iterate)", member["mmd"]), ("CFR+ (average)", member["cfr_plus"])):
            reached = [("-" if n is None else count_text(n)) for n in run["iterations_to_tolerance"].values()]
            rows.append([f"`{member['member']}`", label, *reached, f"{run['final_nash_conv']:.1e}",
                         count_text(run["iterations"]), f"{run['seconds']:.0f}"])
    tolerances = list(result["members"][0]["mmd"]["iterations_to_tolerance"])
    header = ["duel", "method", *(f"iterations to {t}" for t in tolerances), "final NashConv", "iterations",
              "seconds"]
    return md_table(header, ["---", "---"] + ["---:"] * (len(tolerances) + 3), rows)


def duel_small_trained_br_table() -> str:
    """Trained against exact best responses to the heuristic Greek (``duel_small_trained_br.json``)."""
    result = load_json(RESULTS / "duel_small_trained_br.json")
    rows = []
    for member in result["members"]:
        exact = member["exact_best_response"]["persian_win_rate"]
        for run in member["trained_best_responses"]:
            curve = ", ".join(f"{count_text(p['timesteps'])}: {p['win_rate']:.3f}" for p in run["curve"])
            low, high = run["final"]["ci95"]
            rows.append([f"`{member['member']}`", f"{exact:.3f}", str(run["seed"]),
                         f"{run['final']['win_rate']:.3f} [{low:.3f}, {high:.3f}]", curve])
    header = ["duel", "exact best response wins", "seed", "trained best response wins (95% CI)",
              "learning curve (steps: win rate)"]
    return md_table(header, ["---", "---:", "---:", "---:", "---"], rows)
