"""``thermopylae export``: export SB3 (Maskable)PPO zips to the pickle-free ``.json`` + ``.safetensors``
policy format ([`thermopylae_agents.policies.safe_policy`][]), and write a policy as a folder ready to
upload to the Hugging Face Hub (``--policy NAME_OR_PATH --out-dir DIR``: model card ``README.md``,
``config.json`` with the training settings, ``model.safetensors``, ``results.json`` of ``--eval-games``
greedy games and ``replay.mp4`` of one, which needs the ``video`` extra and is left out, with a line
saying so, without it; [`thermopylae_agents.policies.model_card`][]; it needs neither torch nor SB3).
``--push OWNER/NAME`` then uploads the folder to that model repository with ``huggingface_hub`` (the
``rlzoo`` extra installs it; its own login or ``HF_TOKEN``); nothing is uploaded without it.

Every argument is checked before any model is read or any file written (the game and side, the team size
of a co-op model, model files that exist, an output folder that can be written); a bad one ends with one
line on standard error and exit code 2. The description written records the env id and the game options
(``env_options``) the model was trained with, so that the registry refuses it for another game, and its
provenance: the decks of the game, the training commit, command and package version given with
``--training-commit``, ``--training-command``, ``--package-version`` (``unknown`` when not given: an SB3
zip does not record them; ``--shipped`` keeps what the shipped descriptions record), and the version and
commit of this export.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import gymnasium as gym

from thermopylae_agents.cli.args import GAMES, SIDES, env_id_of, int_argument
from thermopylae_agents.cli.console import require_extra
from thermopylae_agents.policies.model_card import (
    DEFAULT_EPISODES,
    REPLAY_FILE,
    check_repo_id,
    push_to_hub,
    write_hf_folder,
)
from thermopylae_agents.policies.safe_policy import (
    POLICY_DIR,
    SHIPPED_ENV_IDS,
    SHIPPED_ENV_OPTIONS,
    export_sb3_policy,
    read_description,
)
from thermopylae_agents.policies.sb3_agent import load_model
from thermopylae_env import __version__
from thermopylae_env.render import safe_text

__all__ = ["build_parser", "main"]

MAX_EVAL_GAMES = 1_000_000


def _version() -> str:
    return __version__


class _Parser(argparse.ArgumentParser):
    """Argument errors in one line (no usage block), exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {safe_text(message, newlines=False)}\n")
        raise SystemExit(2)


def build_parser(prog: str | None = "thermopylae-export-policy") -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        description="Export SB3 (Maskable)PPO zips to the pickle-free .json + .safetensors policy format, "
        "or write a pickle-free policy as a Hugging Face folder (--policy). "
        "Reading a zip unpickles it: export only files you trust.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("models", nargs="*", help="SB3 zip files to export (with --game)")
    parser.add_argument("--game", choices=GAMES, default=None,
                        help="the game the models were trained on (recorded in the JSON; required with "
                        "models)")
    parser.add_argument("--side", choices=SIDES, default=None,
                        help="duel: the side the models play (recorded in the JSON; required for duel "
                        "models)")
    parser.add_argument("--players", type=int_argument(1, 4), default=None, metavar="N",
                        help="co-op: the team size (1..4) the models were trained with (recorded in the "
                        "JSON; required for co-op models)")
    parser.add_argument("--out-dir", metavar="DIR",
                        help="the folder to write: models, --shipped: NAME.json / NAME.safetensors in it "
                        "(default: beside each zip); --policy: the Hugging Face folder (required, new or "
                        "empty)")
    parser.add_argument("--shipped", action="store_true",
                        help=f"export every shipped zip of {POLICY_DIR} beside it")
    for option, what in (("--training-commit", "the git commit of the checkout that trained the models"),
                         ("--training-command", "the command that trained them"),
                         ("--package-version", "the thermopylae-env version that trained them")):
        parser.add_argument(option, default=None, help=f"{what} (recorded in the JSON; default: unknown)")
    parser.add_argument("--policy", metavar="NAME_OR_PATH",
                        help="write this pickle-free policy (a shipped policy name or the path of a policy "
                        ".json / .safetensors / folder) as a Hugging Face folder in --out-dir (README.md "
                        "model card, config.json, model.safetensors, results.json, replay.mp4); uploads "
                        "nothing without --push")
    parser.add_argument("--eval-games", type=int_argument(1, MAX_EVAL_GAMES), default=None, metavar="N",
                        help=f"with --policy: greedy games of results.json (default {DEFAULT_EPISODES})")
    parser.add_argument("--eval-seed", type=int_argument(0, MAX_EVAL_GAMES), default=None, metavar="S",
                        help="with --policy: the seed of the first game (game i: S + i; default 0); the "
                        "replay is the game of seed S")
    parser.add_argument("--push", metavar="REPO", help="with --policy: upload the folder to the Hugging "
                        "Face model repository REPO (OWNER/NAME), created if missing (needs huggingface_hub)")
    return parser


Job = tuple[Path, str, dict[str, Any], dict[str, Any]]


def _given_provenance(args: argparse.Namespace) -> dict[str, Any]:
    given = {"training_commit": args.training_commit, "training_command": args.training_command,
             "package_version": args.package_version}
    return {key: value for key, value in given.items() if value is not None}


def _shipped_provenance(name: str) -> dict[str, Any]:
    """What the shipped description records of the training (kept when the zip is exported again)."""
    path = POLICY_DIR / f"{name}.json"
    if not path.is_file():
        return {}
    recorded = dict(read_description(path).get("provenance", {}))
    return {key: value for key, value in recorded.items() if key not in ("written_by", "decks")}


def _jobs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[Job]:
    """What to export: (zip, env id, game options, provenance) each; every argument checked, nothing
    read yet but the shipped descriptions."""
    jobs: list[Job] = []
    given = _given_provenance(args)
    if args.shipped:
        if args.game is not None or args.side is not None or args.players is not None or given:
            parser.error("--game, --side, --players and the training options are for the models named; "
                         "the shipped ones are known")
        jobs += [(POLICY_DIR / f"{name}.zip", env_id, SHIPPED_ENV_OPTIONS[name], _shipped_provenance(name))
                 for name, env_id in SHIPPED_ENV_IDS.items()]
    if args.models:
        if args.game is None:
            parser.error("give --game coop or --game duel, the game the models named were trained on")
        options: dict[str, Any] = {}
        if args.game == "coop":
            if args.side is not None:
                parser.error("--side is for duel models (--game duel)")
            if args.players is None:
                parser.error("give --players N (1..4), the team size the co-op models were trained with")
            options = {"num_players": args.players}
        else:
            if args.players is not None:
                parser.error("--players is for co-op models only (--game coop)")
            if args.side is None:
                parser.error("give --side greek or --side persian, the side the duel models play")
        env_id = env_id_of(args.game, args.side)
        for model in args.models:
            path = Path(model)
            if not path.is_file():
                parser.error(f"{model}: no such model file (a regular .zip file)")
            jobs.append((path, env_id, options, given))
    elif (args.game or args.side or args.players is not None) and not args.shipped:
        parser.error("--game, --side and --players are for the models named")
    if not jobs:
        parser.error("nothing to export (name models or give --shipped)")
    if args.out_dir is not None:
        _check_out_dir(parser, args.out_dir)
    outputs = [(Path(args.out_dir) if args.out_dir else zip_path.parent) / zip_path.stem
               for zip_path, _, _, _ in jobs]
    if len(set(outputs)) != len(outputs):
        parser.error("two models would be written to the same NAME.json / NAME.safetensors")
    return jobs


def _check_out_dir(parser: argparse.ArgumentParser, out_dir: str) -> None:
    if not out_dir.strip():
        parser.error("--out-dir is empty")
    folder = Path(out_dir)
    if folder.exists() and not folder.is_dir():
        parser.error(f"--out-dir {out_dir}: not a folder")
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        parser.error(f"--out-dir {out_dir}: cannot write there")


def _first_line(err: BaseException) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def _hf_folder(parser: argparse.ArgumentParser, args: argparse.Namespace, prog: str) -> int:
    """``--policy SPEC --out-dir DIR [--push REPO]``: the folder ready to upload (NumPy and safetensors
    only; moviepy for the replay), then the upload. Every argument is checked before a game is played."""
    if (args.models or args.shipped or args.game or args.side or args.players is not None
            or _given_provenance(args)):
        parser.error("--policy takes --out-dir, --eval-games, --eval-seed and --push only (export zips "
                     "first, then write the folder)")
    if not args.policy.strip():
        parser.error("--policy is empty")
    if args.out_dir is None:
        parser.error("--policy needs --out-dir DIR, the Hugging Face folder to write")
    if not args.out_dir.strip():
        parser.error("--out-dir is empty")
    games = DEFAULT_EPISODES if args.eval_games is None else args.eval_games
    seed = 0 if args.eval_seed is None else args.eval_seed
    if args.push is not None:
        require_extra(prog, "huggingface_hub")
        try:
            check_repo_id(args.push)
        except ValueError as err:
            parser.error(f"--push {args.push!r}: {_first_line(err)}")
    try:
        out = write_hf_folder(args.policy, args.out_dir, episodes=games, seed=seed)
    except (ValueError, OSError) as err:
        parser.error(_first_line(err))
    if not (out / REPLAY_FILE).exists():
        print(f"{prog}: {REPLAY_FILE} left out: the replay video needs the 'video' extra "
              '(pip install "thermopylae-env[video]")', file=sys.stderr)
    files = ", ".join(sorted(p.name for p in out.iterdir()))
    if args.push is None:
        print(f"{args.policy} -> {out} ({files}); nothing uploaded (--push REPO uploads it)")
        return 0
    print(f"{args.policy} -> {out} ({files})")
    try:
        url = push_to_hub(out, args.push, commit_message=f"thermopylae export: {args.policy}")
    except Exception as err:  # noqa: BLE001 - network and Hub errors of every kind end in one line
        sys.stderr.write(f"{prog}: error: pushing {out} to {args.push} failed (the folder stays): "
                         f"{safe_text(_first_line(err), newlines=False)}\n")
        return 1
    print(f"pushed to {args.push}: {url}")
    return 0


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    prog = prog or "thermopylae-export-policy"
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.policy is not None:
        return _hf_folder(parser, args, prog)
    for option, value in (("--eval-games", args.eval_games), ("--eval-seed", args.eval_seed),
                          ("--push", args.push)):
        if value is not None:
            parser.error(f"{option} is for --policy (a Hugging Face folder)")
    jobs = _jobs(parser, args)
    require_extra(prog, "stable_baselines3", "sb3_contrib", "torch")

    for zip_path, env_id, options, provenance in jobs:
        out_dir = Path(args.out_dir) if args.out_dir else zip_path.parent
        try:
            model = load_model(zip_path)
            _check_game(model, env_id, options)
            json_path, arrays_path = export_sb3_policy(model, out_dir / zip_path.stem, env_id,
                                                    source=zip_path.name, env_options=options,
                                                    provenance=provenance)
        except (ValueError, OSError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            parser.error(f"{zip_path}: {first}")
        size = arrays_path.stat().st_size + json_path.stat().st_size
        print(f"{zip_path} -> {json_path} + {arrays_path.name} ({math.ceil(size / 1024)} KB)")
    return 0


def _check_game(model: Any, env_id: str, options: dict[str, Any]) -> None:
    """Raise a ``ValueError`` if the model's spaces are not those of ``env_id`` (a policy exported for the
    wrong game would load and play nonsense)."""
    env = gym.make(env_id, **options)
    want = (tuple(env.observation_space.shape), int(env.action_space.n))
    env.close()
    got = (tuple(model.observation_space.shape), int(getattr(model.action_space, "n", -1)))
    if got != want:
        raise ValueError(f"the model sees observations of shape {got[0]} and has {got[1]} actions; "
                         f"{env_id} has {want[0]} and {want[1]}: are --game and --side right?")
