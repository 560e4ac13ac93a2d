"""``thermopylae export``: export SB3 (Maskable)PPO zips to the pickle-free ``.json`` + ``.npz`` policy format
(:mod:`thermopylae_agents.policies.safe_policy`)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

from thermopylae_agents.policies.safe_policy import (
    POLICY_DIR,
    SHIPPED_ENV_IDS,
    export_sb3_policy,
)


def _version() -> str:
    from thermopylae_env import __version__

    return __version__


def build_parser(prog: str | None = "thermopylae-export-policy") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Export SB3 (Maskable)PPO zips to the pickle-free .json + .npz policy format. "
        "Reading a zip unpickles it: export only files you trust.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("models", nargs="*", help="SB3 zip files to export (with --env-id)")
    parser.add_argument("--env-id", help="the environment id the model plays (recorded in the JSON)")
    parser.add_argument("--out-dir", help="where to write NAME.json / NAME.npz (default: beside the zip)")
    parser.add_argument("--shipped", action="store_true",
                        help=f"export every shipped zip of {POLICY_DIR} beside it")
    return parser


def _require_train_extra() -> None:
    try:
        import sb3_contrib  # noqa: F401
        import stable_baselines3  # noqa: F401
    except ImportError as err:
        raise SystemExit(f"thermopylae-export-policy needs the train extra ({err.name} is missing): "
                         "pip install 'thermopylae-env[train]'") from None


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    args = build_parser(prog or "thermopylae-export-policy").parse_args(argv)
    jobs: list[tuple[Path, str]] = []
    if args.shipped:
        jobs += [(POLICY_DIR / f"{name}.zip", env_id) for name, env_id in SHIPPED_ENV_IDS.items()]
    if args.models:
        if not args.env_id:
            raise SystemExit("thermopylae-export-policy: give --env-id for the models named")
        jobs += [(Path(m), args.env_id) for m in args.models]
    if not jobs:
        raise SystemExit("thermopylae-export-policy: nothing to export (name models or give --shipped)")
    _require_train_extra()
    from thermopylae_agents.policies.sb3_agent import load_model

    for zip_path, env_id in jobs:
        out_dir = Path(args.out_dir) if args.out_dir else zip_path.parent
        json_path, npz_path = export_sb3_policy(
            load_model(zip_path), out_dir / zip_path.stem, env_id, source=zip_path.name
        )
        size = npz_path.stat().st_size + json_path.stat().st_size
        print(f"{zip_path} -> {json_path} + {npz_path.name} ({math.ceil(size / 1024)} KB)")
    return 0
