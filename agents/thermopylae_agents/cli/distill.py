"""``thermopylae distill``: expert iteration (DAgger) of the co-op search expert into a MaskablePPO policy
([`thermopylae_agents.training.expert_iteration`][]).

Settings come from ``configs/coop_expert_iteration.yaml`` (or ``--config``); the options override them.
The run folder receives ``policy.zip`` (SB3), ``policy.json`` + ``policy.safetensors`` (pickle-free; either
file is an agent spec: ``thermopylae evaluate --players 1 RUN/policy.json``), ``dataset.npz``,
``config.yaml`` and ``report.json``. A bad argument or setting ends with one line on standard error and
exit status 2 before anything is written.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from typing import NoReturn

from thermopylae_agents.cli.args import description, float_argument, int_argument
from thermopylae_env.render import safe_text

__all__ = ["build_parser", "main"]

PROG = "thermopylae distill"


class _Parser(argparse.ArgumentParser):
    """Argument errors in one line (no usage block), exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {safe_text(message, newlines=False)}\n")
        raise SystemExit(2)


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = _Parser(prog=prog, description=description(__doc__))
    parser.add_argument("--config", default=None, help="YAML settings (default: the shipped "
                        "configs/coop_expert_iteration.yaml)")
    parser.add_argument("--players", type=int_argument(1, 4), default=None, metavar="N",
                        help="team size 1..4")
    parser.add_argument("--start", default=None, help="start policy: a shipped co-op policy name, an SB3 zip "
                        "path, or bc-heuristic (default: the shipped policy of the team size)")
    parser.add_argument("--rounds", type=int_argument(1, 1000), default=None, help="DAgger rounds")
    parser.add_argument("--games", type=int_argument(1, 99_999), default=None,
                        help="games played and labelled per round")
    parser.add_argument("--beta", type=float_argument(0.0, 1.0), default=None,
                        help="the search's share of the moves played in the first round")
    parser.add_argument("--epochs", type=int_argument(0, 10_000), default=None,
                        help="cloning passes over the data set per round")
    parser.add_argument("--ppo-timesteps", type=int_argument(0, 10**9), default=None,
                        help="MaskablePPO fine-tune steps after each round (0: none)")
    parser.add_argument("--eval-games", type=int_argument(0, 10**7), default=None,
                        help="held-out deals played after each round (0: none)")
    parser.add_argument("--seed", type=int_argument(0, 2**20), default=None,
                        help="seeds the deals, the labels, the mixing coins and torch (default: the "
                        "config's, 0 in the shipped one)")
    parser.add_argument("--workers", type=int_argument(1, 256), default=None,
                        help="processes playing and labelling")
    parser.add_argument("--run-dir", default=None, metavar="DIR",
                        help="the run folder (default: runs/coop-distill-seed<seed>)")
    parser.add_argument("--no-progress", action="store_true", help="log lines instead of progress bars")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    prog = prog or PROG
    parser = build_parser(prog)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)  # before the training imports: --help needs no extra
    from thermopylae_agents.training.expert_iteration import load_distill_config, run  # extra: train

    for flag, value in (("--run-dir", args.run_dir), ("--config", args.config), ("--start", args.start)):
        if value is not None and not value.strip():
            parser.error(f"{flag}: empty value")
    try:
        cfg = load_distill_config(
            args.config, num_players=args.players, start=args.start, rounds=args.rounds,
            games_per_round=args.games, beta_start=args.beta, epochs=args.epochs,
            ppo_timesteps=args.ppo_timesteps, eval_games=args.eval_games, seed=args.seed,
            workers=args.workers,
        )
        run(cfg, args.run_dir, progress=not args.no_progress, command=shlex.join([prog, *argv]))
    except (ValueError, OSError) as error:
        text = " ".join((str(error) or type(error).__name__).split())
        sys.stderr.write(f"{prog}: error: {safe_text(text, newlines=False)}\n")
        return 2
    return 0
