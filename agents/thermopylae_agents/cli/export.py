"""``thermopylae export``: export SB3 (Maskable)PPO zips to the pickle-free ``.json`` + ``.safetensors``
policy format ([`thermopylae_agents.policies.safe_policy`][]), and write a policy as a folder ready to
upload to the Hugging Face Hub (``--hf-folder DIR --policy NAME_OR_PATH``: model card ``README.md``,
``config.json``, ``model.safetensors``; [`thermopylae_agents.policies.model_card`][]; nothing is
uploaded, and it needs neither torch nor SB3).

Every argument is checked before any model is read or any file written (known env ids only, the team size
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

from thermopylae_agents.cli.args import int_argument
from thermopylae_agents.cli.console import require_extra
from thermopylae_agents.policies.registry import resolve_env_id
from thermopylae_agents.policies.safe_policy import (
    POLICY_DIR,
    SHIPPED_ENV_IDS,
    SHIPPED_ENV_OPTIONS,
    export_sb3_policy,
    read_description,
)
from thermopylae_env import COOP_ID
from thermopylae_env.render import safe_text

__all__ = ["build_parser", "main"]


def _version() -> str:
    from thermopylae_env import __version__

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
        "or write a pickle-free policy as a Hugging Face folder (--hf-folder). "
        "Reading a zip unpickles it: export only files you trust.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("models", nargs="*", help="SB3 zip files to export (with --env-id)")
    parser.add_argument("--env-id", help="the environment the models were trained on: coop, greek, persian "
                        "or a full id (recorded in the JSON)")
    parser.add_argument("--players", type=int_argument(1, 4), default=None, metavar="N",
                        help="co-op: the team size (1..4) the models were trained with (recorded in the "
                        "JSON; required for co-op models)")
    parser.add_argument("--out-dir",
                        help="where to write NAME.json / NAME.safetensors (default: beside the zip)")
    parser.add_argument("--shipped", action="store_true",
                        help=f"export every shipped zip of {POLICY_DIR} beside it")
    for option, what in (("--training-commit", "the git commit of the checkout that trained the models"),
                         ("--training-command", "the command that trained them"),
                         ("--package-version", "the thermopylae-env version that trained them")):
        parser.add_argument(option, default=None, help=f"{what} (recorded in the JSON; default: unknown)")
    parser.add_argument("--hf-folder", metavar="DIR", help="write the policy of --policy as a Hugging Face "
                        "folder (README.md model card, config.json, model.safetensors); uploads nothing")
    parser.add_argument("--policy", help="with --hf-folder: a shipped policy name or the path of a policy "
                        ".json / .safetensors / folder")
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
        if args.env_id is not None or args.players is not None or given:
            parser.error("--env-id, --players and the training options are for the models named; the "
                         "shipped ones are known")
        jobs += [(POLICY_DIR / f"{name}.zip", env_id, SHIPPED_ENV_OPTIONS[name], _shipped_provenance(name))
                 for name, env_id in SHIPPED_ENV_IDS.items()]
    if args.models:
        if not args.env_id:
            parser.error("give --env-id (coop, greek, persian or a full id) for the models named")
        try:
            env_id = resolve_env_id(args.env_id)
        except ValueError as err:
            parser.error(str(err))
        options: dict[str, Any] = {}
        if env_id == COOP_ID:
            if args.players is None:
                parser.error("give --players N (1..4), the team size the co-op models were trained with")
            options = {"num_players": args.players}
        elif args.players is not None:
            parser.error("--players is for co-op models only")
        for model in args.models:
            path = Path(model)
            if not path.is_file():
                parser.error(f"{model}: no such model file (a regular .zip file)")
            jobs.append((path, env_id, options, given))
    elif args.players is not None and not args.shipped:
        parser.error("--players is for the models named")
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


def _hf_folder(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--hf-folder DIR --policy SPEC``: the folder ready to upload; NumPy and safetensors only."""
    from thermopylae_agents.policies.model_card import write_hf_folder

    if args.models or args.shipped or args.env_id or args.players or args.out_dir or _given_provenance(args):
        parser.error("--hf-folder takes --policy only (export zips first, then write the folder)")
    if not args.policy:
        parser.error("--hf-folder needs --policy NAME_OR_PATH (a shipped name or a policy .json)")
    if not args.hf_folder.strip():
        parser.error("--hf-folder is empty")
    try:
        out = write_hf_folder(args.policy, args.hf_folder)
    except (ValueError, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        parser.error(first)
    files = ", ".join(sorted(p.name for p in out.iterdir()))
    print(f"{args.policy} -> {out} ({files}); nothing uploaded")
    return 0


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    prog = prog or "thermopylae-export-policy"
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.hf_folder is not None:
        return _hf_folder(parser, args)
    if args.policy is not None:
        parser.error("--policy is for --hf-folder")
    jobs = _jobs(parser, args)
    require_extra(prog, "stable_baselines3", "sb3_contrib", "torch")
    from thermopylae_agents.policies.sb3_agent import load_model

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
    import gymnasium as gym

    import thermopylae_env  # noqa: F401 - registers the environments

    env = gym.make(env_id, **options)
    want = (tuple(env.observation_space.shape), int(env.action_space.n))
    env.close()
    got = (tuple(model.observation_space.shape), int(getattr(model.action_space, "n", -1)))
    if got != want:
        raise ValueError(f"the model sees observations of shape {got[0]} and has {got[1]} actions; "
                         f"{env_id} has {want[0]} and {want[1]}: is --env-id right?")
