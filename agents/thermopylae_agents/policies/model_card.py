"""Model cards in the Hugging Face format, and the folder a pickle-free policy is uploaded as.

A model card is Markdown with YAML front matter (``library_name``, ``license``, ``tags``, and for the
shipped policies a ``model-index`` of their measured win rates, which ``benchmarks/policy_files.py cards``
writes from the committed result files), then the sections *Intended use*, *Limitations* and *Training*
(the commit and command that trained the policy, from its description's ``provenance``).

[`write_hf_folder`][thermopylae_agents.policies.model_card.write_hf_folder] writes a folder ready to upload to
the Hugging Face Hub (nothing is uploaded): ``README.md`` (the model card), ``config.json`` (the policy
description) and ``model.safetensors`` (the arrays).
[`thermopylae_agents.policies.safe_policy.load_safe_policy`][] loads the folder by its path, with NumPy and
``safetensors`` only. The front matter is written by a small emitter here, so that neither writing nor loading
needs PyYAML.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from thermopylae_agents.policies.safe_policy import (
    HF_CONFIG,
    description_path,
    load_safe_policy,
    write_policy,
)

__all__ = [
    "LIBRARY_NAME",
    "TAGS",
    "card_text",
    "default_card",
    "front_matter",
    "intended_use",
    "limitations",
    "split_card",
    "to_yaml",
    "training_text",
    "write_hf_folder",
]

LIBRARY_NAME = "thermopylae-env"
TAGS = ("reinforcement-learning", "gymnasium", "thermopylae", "card-game", "action-masking", "maskable-ppo")
_FRONT = re.compile(r"\A---\n(?P<front>.*?\n)---\n", re.DOTALL)
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_GAMES = {
    "thermopylae/Coop-v0": "the co-op game",
    "thermopylae/DuelGreek-v0": "the Greek side of the duel",
    "thermopylae/DuelPersian-v0": "the Persian side of the duel",
}


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))  # a JSON string is a YAML double-quoted scalar


def _key(key: Any) -> str:
    text = str(key)
    return text if _PLAIN_KEY.match(text) else json.dumps(text)


def to_yaml(value: Any, indent: int = 0) -> str:
    """Block-style YAML of nested dicts, lists, strings, numbers, booleans and ``None`` (strings quoted,
    so that no text is read back as another type)."""
    pad = " " * indent
    if isinstance(value, Mapping):
        if not value:
            return pad + "{}\n"
        lines = []
        for key, item in value.items():
            if isinstance(item, (Mapping, list, tuple)) and item:
                lines.append(f"{pad}{_key(key)}:\n{to_yaml(item, indent + 2)}")
            else:
                lines.append(f"{pad}{_key(key)}: {_inline(item)}\n")
        return "".join(lines)
    if isinstance(value, (list, tuple)):
        if not value:
            return pad + "[]\n"
        lines = []
        for item in value:
            if isinstance(item, (Mapping, list, tuple)) and item:
                nested = to_yaml(item, indent + 2)
                lines.append(f"{pad}- {nested[indent + 2:]}")
            else:
                lines.append(f"{pad}- {_inline(item)}\n")
        return "".join(lines)
    return pad + _scalar(value) + "\n"


def _inline(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, (list, tuple)):
        return "[]"
    return _scalar(value)


def split_card(text: str) -> tuple[str | None, str]:
    """A card's YAML front matter (``None`` when it has none) and its Markdown body."""
    match = _FRONT.match(text)
    if match is None:
        return None, text
    return match.group("front"), text[match.end():].lstrip("\n")


def card_text(front: Mapping[str, Any], body: str) -> str:
    """A model card: ``front`` as YAML front matter, then ``body``."""
    return f"---\n{to_yaml(front)}---\n\n{body.lstrip(chr(10))}"


def front_matter(description: Mapping[str, Any], model_index: list[Any] | None = None) -> dict[str, Any]:
    """The front matter of a policy's card: library, license, tags (with its env id) and, when given,
    its ``model-index``."""
    front: dict[str, Any] = {
        "library_name": LIBRARY_NAME,
        "license": "mit",
        "tags": [*TAGS, str(description["env_id"])],
        "pipeline_tag": "reinforcement-learning",
    }
    if model_index:
        front["model-index"] = model_index
    return front


def _team(description: Mapping[str, Any]) -> str:
    players = description.get("env_options", {}).get("num_players")
    return f" with a team of {players} (`num_players={players}`)" if players is not None else ""


def intended_use(description: Mapping[str, Any]) -> str:
    """The *Intended use* section of a policy's card."""
    game = _GAMES.get(str(description["env_id"]), f"`{description['env_id']}`")
    return (
        f"Playing {game}{_team(description)} (`{description['env_id']}`, default decks): as an opponent or "
        "partner in `thermopylae play`, as a hint giver (`--hints`), as a baseline in "
        "`thermopylae evaluate`, and as a starting point for further training. It is loaded with NumPy "
        "and `safetensors` alone (`load_safe_policy`, no torch, no pickle) and plays the most likely "
        "legal action (or samples the masked softmax).\n"
    )


def limitations(description: Mapping[str, Any]) -> str:
    """The *Limitations* section of a policy's card."""
    return (
        f"Trained and measured on `{description['env_id']}`{_team(description)}, default decks only: "
        "the registry refuses it for any other game (env id or team size), and another Persian deck is "
        "outside its training distribution. It sees one seat's observation and the action mask, nothing "
        "more. "
        "The measured win rates hold for the opponents and deals they were measured on; they say nothing "
        "of other opponents. It is a research baseline for a card game, not a player of real stakes.\n"
    )


def training_text(description: Mapping[str, Any]) -> str:
    """What a policy's description records of its training: commit, command, package version, decks."""
    prov = description.get("provenance", {})
    lines = [
        f"* training commit: `{prov.get('training_commit', 'unknown')}`",
        f"* training command: `{prov.get('training_command', 'unknown')}`",
        f"* package version: `{prov.get('package_version', 'unknown')}`",
    ]
    if "shipped_in_commit" in prov:
        lines.append(f"* shipped in commit: `{prov['shipped_in_commit']}`")
    for deck, entry in sorted(prov.get("decks", {}).items()):
        lines.append(f"* {deck} deck: `{entry.get('name')}` (SHA-256 `{entry.get('sha256')}`)")
    if "source" in description:
        lines.append(f"* exported from: `{description['source']}`")
    return "\n".join(lines) + "\n"


def default_card(name: str, description: Mapping[str, Any]) -> str:
    """The model card of a policy that has none of its own: front matter and the sections, from its
    description."""
    body = (
        f"# {name}\n\nA pickle-free policy of thermopylae-env: {description['features']} features, "
        f"{description['observation_size']} observation values, {description['num_actions']} actions.\n\n"
        f"## Intended use\n\n{intended_use(description)}\n## Limitations\n\n{limitations(description)}\n"
        f"## Training\n\n{training_text(description)}\n## Use\n\n```python\n"
        "from thermopylae_agents.policies.safe_policy import load_safe_policy\n"
        "policy = load_safe_policy(\"path/to/this/folder\")\n"
        "action = policy.act(observation, action_mask)\n```\n"
    )
    return card_text(front_matter(description), body)


def _check_out_dir(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out}: the Hugging Face folder must be a new or empty folder")


def write_hf_folder(policy: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> Path:
    """Write the policy ``policy`` (a shipped name or a path, any format version) as a folder ready to
    upload to the Hugging Face Hub: ``README.md`` (its own card ``NAME.md`` when it has one with front
    matter, else [`default_card`][thermopylae_agents.policies.model_card.default_card]), ``config.json`` and
    ``model.safetensors``. The folder must be new or empty. The written pair is loaded back and its arrays
    compared before returning the folder's absolute path."""
    out = Path(out_dir)
    _check_out_dir(out)
    source = description_path(policy)
    loaded = load_safe_policy(source)
    card_path = source.with_suffix(".md")
    own_card = card_path.read_text(encoding="utf-8") if card_path.is_file() else ""
    card = own_card if split_card(own_card)[0] is not None else default_card(loaded.name, loaded.description)
    description = {key: value for key, value in loaded.description.items()
                   if key not in ("format", "format_version", "arrays_sha256")}
    out.mkdir(parents=True, exist_ok=True)
    write_policy(out / HF_CONFIG, description, loaded.arrays)
    (out / "README.md").write_text(card, encoding="utf-8")
    return out.resolve()  # a path, never read as a shipped name (a bare "hub" would be)
