"""The compiled co-op search's win rate against its search effort, paired on the same deals.

    python benchmarks/search_effort.py play --runs runs/effort --games 500 --settings 128x16
    python benchmarks/search_effort.py play --runs runs/effort --games 500 --settings 8x4 16x8 32x8 64x16
    python benchmarks/search_effort.py play --runs runs/effort --games 500 --settings 32x8+policy
    python benchmarks/search_effort.py join --runs runs/effort --json benchmarks/results/search_effort.json \\
        --plot docs/images/search_effort.png

A developer script, not a test. ``play`` plays
:class:`~thermopylae_agents.players.coop_search.CoopSearchExpert` (``engine="compiled"``, every other
option its default) at each setting ``NxK`` (``n_determinizations x rollouts``; ``NxK+policy``: with the
team's shipped policy network playing the rollouts instead of the heuristic, ``rollout_policy`` loaded by
``load_safe_policy``, see ``TEAM_POLICIES``) on the deals ``--seed`` to ``--seed + --games - 1``, each
game as ``benchmarks/search_speed.py`` plays it (deal, dice and the player's seed from the deal's seed),
timed in process CPU seconds (after an untimed game that compiles the kernels, one per kind of rollout).
Each game is appended as one line to ``RUNS/p{N}_{NxK}.jsonl`` as soon as it ends, so that a run stopped
anywhere resumes where it stopped, and the settings can be split over processes (one
``play`` per group of settings). Within one process the deals are the outer loop, so a run stopped early
has played the same deals at each of its settings. Each finished ``play`` appends its result-file header
(date, commit, command, clocks, load averages) to ``RUNS/p{N}_{NxK}.runs.jsonl`` of each of its settings.

``join`` keeps the deals that every setting played and writes one JSON: per setting the wins, the Wilson
95% interval, CPU seconds per game and per move, every game's outcome, and the paired comparison with the
reference setting (``--reference``, the search's default 32x8): the difference of the win rates with
Newcombe's interval and McNemar's exact p (``thermopylae_agents.evaluation.stats``). ``--plot`` draws the
win rates with their intervals against CPU seconds per move.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from search_speed import play

from thermopylae_agents.evaluation.stats import paired_comparison, wilson_interval
from thermopylae_agents.policies.provenance import Measurement
from thermopylae_agents.policies.safe_policy import load_safe_policy

HERE = Path(__file__).resolve().parent
DEFAULT_SETTINGS = ("8x4", "16x8", "32x8", "64x16", "128x16")
REFERENCE = "32x8"  # CoopSearchExpert's defaults
POLICY_SUFFIX = "+policy"  # NxK+policy: the team's shipped policy plays the rollouts
TEAM_POLICIES = {1: "coop_maskable_ppo", 2: "coop_2p_maskable_ppo", 3: "coop_3p_maskable_ppo",
                 4: "coop_4p_maskable_ppo"}


def parse_setting(text: str) -> tuple[int, int, bool]:
    """``"NxK"`` -> ``(N, K, False)``, ``"NxK+policy"`` -> ``(N, K, True)``, both numbers whole and >= 1;
    ``ValueError`` with a one-line message otherwise."""
    policy = text.endswith(POLICY_SUFFIX)
    parts = (text[: -len(POLICY_SUFFIX)] if policy else text).split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"a setting is NxK or NxK{POLICY_SUFFIX} (determinizations x rollouts, with the "
                         f"team's policy playing the rollouts) with whole numbers >= 1, got {text!r}")
    return int(parts[0]), int(parts[1]), policy


def setting_options(setting: str, players: int, policies: dict[str, object]) -> dict:
    """The search's keyword arguments of ``setting`` (``policies`` caches the loaded policy)."""
    n_det, rollouts, policy = parse_setting(setting)
    options: dict = {"n_determinizations": n_det, "rollouts": rollouts}
    if policy:
        name = TEAM_POLICIES[players]
        if name not in policies:
            policies[name] = load_safe_policy(name)
        options["rollout_policy"] = policies[name]
    return options


def games_file(runs: Path, players: int, setting: str) -> Path:
    return runs / f"p{players}_{setting}.jsonl"


def read_games(path: Path) -> dict[int, dict]:
    """Seed -> the game's record; a last line cut off by a stopped run is dropped from the file."""
    if not path.exists():
        return {}
    text = path.read_text()
    lines = text.splitlines()
    if text and not text.endswith("\n"):
        lines = lines[:-1]
        path.write_text("".join(line + "\n" for line in lines))
    games = {}
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
            games[int(record["seed"])] = record
        except (ValueError, KeyError, TypeError) as error:
            raise SystemExit(f"search_effort.py: error: {path}: line {number} is not a game record ({error})"
                             ) from None
    return games


def play_settings(runs: Path, players: int, settings: list[str], seeds: range, argv: list[str]) -> None:
    """Every setting on every deal of ``seeds`` not yet in its file, the deals as the outer loop."""
    measurement = Measurement()
    runs.mkdir(parents=True, exist_ok=True)
    done = {s: read_games(games_file(runs, players, s)) for s in settings}
    policies: dict[str, object] = {}
    # The kernels compile (or load from numba's cache) on the first game: not on a timed one.
    play(players, seeds.start, "compiled", {"n_determinizations": 2, "rollouts": 2})
    if any(parse_setting(s)[2] for s in settings):
        play(players, seeds.start, "compiled", setting_options(f"2x2{POLICY_SUFFIX}", players, policies))
    for seed in seeds:
        for setting in settings:
            if seed in done[setting]:
                continue
            won, moves, cpu = play(players, seed, "compiled", setting_options(setting, players, policies))
            record = {"seed": seed, "won": int(won), "moves": len(moves), "cpu_s": round(cpu, 5)}
            with games_file(runs, players, setting).open("a") as out:
                out.write(json.dumps(record) + "\n")
            done[setting][seed] = record
        print(f"  deal {seed}: " + ", ".join(
            f"{s} {sum(g['won'] for g in done[s].values())}/{len(done[s])}" for s in settings), flush=True)
    header = measurement.header(Path(__file__), argv)
    for setting in settings:
        with (runs / f"p{players}_{setting}.runs.jsonl").open("a") as out:
            out.write(json.dumps(header) + "\n")


def _setting_result(setting: str, games: dict[int, dict], seeds: list[int], players: int) -> dict:
    n_det, rollouts, policy = parse_setting(setting)
    won = [games[s]["won"] for s in seeds]
    cpu = [games[s]["cpu_s"] for s in seeds]
    moves = [games[s]["moves"] for s in seeds]
    wins = sum(won)
    return {
        "setting": setting, "n_determinizations": n_det, "rollouts": rollouts,
        "rollout_policy": TEAM_POLICIES[players] if policy else None, "games": len(seeds),
        "wins": wins, "win_rate": wins / len(seeds), "ci95": list(wilson_interval(wins, len(seeds))),
        "cpu_s_per_game": sum(cpu) / len(seeds), "cpu_s_per_move": sum(cpu) / max(sum(moves), 1),
        "per_game": {"seed": seeds, "won": won, "moves": moves, "cpu_s": cpu},
    }


def join(runs: Path, players: int, settings: list[str], reference: str) -> dict:
    """The settings on the deals every one of them played, each paired with ``reference``."""
    played = {s: read_games(games_file(runs, players, s)) for s in settings}
    missing = [s for s, games in played.items() if not games]
    if missing:
        raise SystemExit(f"search_effort.py: error: no games of {', '.join(missing)} in {runs}")
    seeds = sorted(set.intersection(*(set(games) for games in played.values())))
    if not seeds:
        raise SystemExit(f"search_effort.py: error: the settings have no deal in common in {runs}")
    results = [_setting_result(s, played[s], seeds, players) for s in settings]
    won = {r["setting"]: r["per_game"]["won"] for r in results}
    for result in results:
        result["paired_with_reference"] = paired_comparison(
            result["setting"], won[result["setting"]], reference, won[reference]).summary()
    plays = {}
    for setting in settings:
        path = runs / f"p{players}_{setting}.runs.jsonl"
        plays[setting] = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return {"players": players, "reference": reference, "deal_seeds": [seeds[0], seeds[-1]],
            "games": len(seeds), "search": "CoopSearchExpert(engine='compiled'), other options default "
            "(rollout_policy: the policy that plays the rollouts; the heuristic where null)",
            "settings": results, "plays": plays}


def plot(document: dict, path: Path) -> None:
    """Win rate with its 95% interval against CPU seconds per move (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    # Heuristic rollouts as one line of growing effort; policy rollouts as points of their own.
    for policy, style, label in ((False, "o-", "heuristic rollouts"), (True, "s", "policy rollouts")):
        rows = [r for r in document["settings"] if bool(r.get("rollout_policy")) == policy]
        if not rows:
            continue
        x = [r["cpu_s_per_move"] * 1000 for r in rows]
        y = [100 * r["win_rate"] for r in rows]
        low = [100 * (r["win_rate"] - r["ci95"][0]) for r in rows]
        high = [100 * (r["ci95"][1] - r["win_rate"]) for r in rows]
        axes.errorbar(x, y, yerr=[low, high], fmt=style, capsize=4, label=label)
        for row, xi, yi in zip(rows, x, y, strict=True):
            axes.annotate(row["setting"], (xi, yi), textcoords="offset points", xytext=(6, -12))
    axes.set_xscale("log")
    axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("CPU ms per move (one core, log scale)")
    axes.set_ylabel("win rate, % (95% Wilson interval)")
    team = "solo" if document["players"] == 1 else f"{document['players']} players"
    axes.set_title(f"Compiled co-op search, {team}: {document['games']} paired deals")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("play", "play settings on deals, appending each game to RUNS"),
                       ("join", "join the settings' games in RUNS into one JSON (and a plot)")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--runs", type=Path, required=True, help="folder of the per-setting game files")
        sub.add_argument("--settings", nargs="+", default=list(DEFAULT_SETTINGS),
                         help=f"settings NxK or NxK{POLICY_SUFFIX}")
        sub.add_argument("--players", type=int, default=1, help="team size (1..4)")
    play_parser = commands.choices["play"]
    play_parser.add_argument("--games", type=int, default=500, help="deals per setting")
    play_parser.add_argument("--seed", type=int, default=0, help="first deal seed")
    join_parser = commands.choices["join"]
    join_parser.add_argument("--reference", default=REFERENCE, help="the setting the others are paired with")
    join_parser.add_argument("--json", type=Path, required=True, help="output file")
    join_parser.add_argument("--plot", type=Path, help="PNG of win rate against CPU time per move")
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    args = parser.parse_args(arguments)
    if args.players not in (1, 2, 3, 4):
        parser.error(f"--players is a team size 1..4, got {args.players}")
    for setting in args.settings:
        try:
            parse_setting(setting)
        except ValueError as error:
            parser.error(str(error))
    if len(set(args.settings)) != len(args.settings):
        parser.error("--settings names a setting twice")
    if args.command == "play":
        if args.games < 1 or args.seed < 0:
            parser.error("--games must be at least 1 and --seed at least 0")
        seeds = range(args.seed, args.seed + args.games)
        play_settings(args.runs, args.players, args.settings, seeds, arguments)
        return 0
    if args.reference not in args.settings:
        parser.error(f"--reference {args.reference} is not one of --settings")
    if not args.runs.is_dir():
        parser.error(f"--runs: {args.runs} is not a folder")
    measurement = Measurement()
    document = join(args.runs, args.players, args.settings, args.reference)
    document = {**measurement.header(Path(__file__), arguments), **document}
    args.json.write_text(json.dumps(document, indent=1) + "\n")
    if args.plot is not None:
        plot(document, args.plot)
    for row in document["settings"]:
        pair = row["paired_with_reference"]
        low, high = row["ci95"]
        print(f"  {row['setting']:>7}: {row['wins']}/{row['games']} [{low:.1%}, {high:.1%}], "
              f"{1000 * row['cpu_s_per_move']:.1f} CPU ms per move; - {args.reference}: "
              f"{pair['difference']:+.1%} [{pair['ci95'][0]:+.1%}, {pair['ci95'][1]:+.1%}] "
              f"p {pair['p_value']:.3g}")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
