"""The one agent registry: every spec string of the command line, evaluation, records and training.

Spec strings ([`parse_spec`][thermopylae_agents.policies.registry.parse_spec] checks one without loading
anything; [`make_agent`][thermopylae_agents.policies.registry.make_agent] builds it):

* ``random``: a uniformly random legal player (any game);
* ``heuristic``: the hand-written player of the game (co-op:
  [`CoopHeuristic`][thermopylae_agents.players.coop_heuristic.CoopHeuristic]; duel: the side's
  [`opponents`][thermopylae_env.duel.opponents] player);
* ``search`` or ``search:N,K`` or ``search:key=value,...``: the co-op search player
  ([`CoopSearchExpert`][thermopylae_agents.players.coop_search.CoopSearchExpert]; ``N`` determinizations,
  ``K`` rollouts); values are ASCII decimal numbers within
  [`SEARCH_BOUNDS`][thermopylae_agents.policies.registry.SEARCH_BOUNDS] (whole numbers for ``N``, ``K``,
  ``max_candidates``, ``min_rounds``; ``N x K`` at most
  [`MAX_SEARCH_ROLLOUTS`][thermopylae_agents.policies.registry.MAX_SEARCH_ROLLOUTS]), each option given
  once, and keys the player's keyword arguments, but for ``rollout=POLICY``: a pickle-free policy (a
  shipped name or a ``.json`` path, as below, trained on the co-op game of the team size played) plays the
  search's rollouts instead of the heuristic;
* a model path (anything with a folder separator or a suffix, ``.zip`` mostly): an SB3 model played
  by [`SB3Agent`][thermopylae_agents.policies.sb3_agent.SB3Agent];
* ``fast:PATH``: the model at ``PATH`` played through its NumPy copy
  ([`thermopylae_agents.policies.frozen_policy.FrozenPolicy`][]);
* a shipped policy by name (``coop_maskable_ppo``, ``duel_greek_maskable_ppo``, ...; also after
  ``fast:``): the pickle-free weights (``NAME.json`` + ``NAME.safetensors``) of
  ``thermopylae_agents/policies/``, found through `importlib.resources` (so they work after a
  plain ``pip install``) and played by
  [`thermopylae_agents.policies.safe_policy.load_safe_policy`][]: no pickle is opened;
* the path of such a ``.json`` description (``my_policy.json``, written by ``thermopylae export``;
  also its ``.safetensors`` file, an old ``.json`` + ``.npz`` pair, or a Hugging Face folder of
  ``config.json`` + ``model.safetensors`` written by ``thermopylae export --policy``);
* ``rllib:PATH``: a policy trained on RLlib and exported by ``thermopylae rllib`` (a data-only
  ``.npz``, read without pickle or Ray:
  [`load_rllib_agent`][thermopylae_agents.policies.rllib_policy.load_rllib_agent]);
* ``LABEL=SPEC``: ``SPEC`` shown as ``LABEL`` in tables, plots and records (``ppo=runs/a/final.zip``).

Names and paths: a spec with a folder separator (``/``) or a suffix (``.json``, ``.zip``, ...) is a path
and means that file; anything else is a name, and a name is never looked up in the working folder (a
``NAME.json`` / ``NAME.safetensors`` pair lying there does not replace the shipped policy ``NAME``). A file of
the working folder is named by its path: ``./mine.json``, ``mine.json``, ``model.zip``.

The game a policy was trained on: a pickle-free policy's description records its env id and game options
(``env_options``, e.g. ``{"num_players": 2}``; options it does not record are the env's defaults), and an
SB3 zip is known by the exported pair beside it (``NAME.json`` + ``NAME.safetensors`` of ``NAME.zip``, as
``thermopylae export`` writes them). [`make_agent`][thermopylae_agents.policies.registry.make_agent] refuses
such a policy for any other game (another env, another team size) with a one-line
[`AgentSpecError`][thermopylae_agents.policies.registry.AgentSpecError] naming both games, before loading it.
A zip with no description beside it does not say what it was trained on and is not checked. The Persian deck
is not compared (a deck is data, not a recorded option).

A malformed spec raises [`AgentSpecError`][thermopylae_agents.policies.registry.AgentSpecError] (a
``ValueError``) with a one-line message.

SB3 model files are pickles: loading one can run code. A spec names a model only when a person typed it
(command line, API argument); nothing read from a file (a game record, a config) is turned into a loaded
model by this module on its own.

New kinds of spec (a pickle-free weights file, an RLlib export) are added with
[`register_kind`][thermopylae_agents.policies.registry.register_kind]: ``register_kind("safe", build)`` makes
``safe:ARG`` call ``build(ARG, context)``.
"""

from __future__ import annotations

import importlib.resources
import inspect
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thermopylae_agents.players.coop_heuristic import CoopHeuristic
from thermopylae_agents.players.coop_search import CoopSearchExpert
from thermopylae_agents.policies.frozen_policy import FrozenPolicy
from thermopylae_agents.policies.rllib_policy import load_rllib_agent
from thermopylae_agents.policies.safe_policy import (
    ARRAY_SUFFIXES,
    description_path,
    is_path,
    is_policy_folder,
    load_safe_policy,
    read_description,
)
from thermopylae_agents.policies.sb3_agent import SB3Agent, load_model
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID
from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian, RandomAgent

__all__ = [
    "AgentSpec",
    "AgentSpecError",
    "BuildContext",
    "check_agent_game",
    "MAX_SEARCH_ROLLOUTS",
    "SEARCH_BOUNDS",
    "make_agent",
    "model_path",
    "parse_spec",
    "register_kind",
    "resolve_env_id",
    "shipped_policies",
    "shipped_policy_path",
]

_ENV_ALIASES = {
    "coop": COOP_ID,
    "co-op": COOP_ID,
    "duel": GREEK_ID,
    "duel-greek": GREEK_ID,
    "greek": GREEK_ID,
    "duel-persian": PERSIAN_ID,
    "persian": PERSIAN_ID,
}
_LABEL = re.compile(r"^([A-Za-z0-9_.+-]{1,40})=(.+)$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$", re.ASCII)
_MAX_SPEC = 1000


class AgentSpecError(ValueError):
    """A spec string that names no agent (the message is one line and says what is expected)."""


def resolve_env_id(name: str) -> str:
    """The Gymnasium id of an env name (``coop``, ``duel``, ``greek``, ``persian`` or a full id)."""
    env_id = _ENV_ALIASES.get(str(name).lower(), name)
    if env_id not in (COOP_ID, GREEK_ID, PERSIAN_ID):
        raise ValueError(f"unknown environment {name!r}; expected coop, duel, greek, persian or a full id")
    return env_id


# ------------------------------------------------------------------------------------- shipped policies
def _policy_folder() -> Any:
    return importlib.resources.files("thermopylae_agents") / "policies"


def shipped_policies() -> list[str]:
    """The names of the policies shipped with the package (file names without ``.zip``)."""
    return sorted(entry.name[:-4] for entry in _policy_folder().iterdir() if entry.name.endswith(".zip"))


def shipped_policy_path(name: str) -> Path:
    """The file of the shipped policy ``name`` (``KeyError``-free: an unknown name is an
    [`AgentSpecError`][thermopylae_agents.policies.registry.AgentSpecError] listing the known ones)."""
    stem = name[:-4] if name.endswith(".zip") else name
    if stem not in shipped_policies():
        raise AgentSpecError(f"no shipped policy named {name!r}; shipped: {', '.join(shipped_policies())}")
    return Path(os.fspath(_policy_folder() / f"{stem}.zip"))


# ------------------------------------------------------------------------------------------ the grammar
@dataclass(frozen=True)
class AgentSpec:
    """A parsed spec: ``kind`` (``random``, ``heuristic``, ``search``, ``model``, ``fast`` or a registered
    kind), its ``argument`` (search options, a path, ...) and the ``label`` shown for it."""

    kind: str
    argument: str
    label: str
    options: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class BuildContext:
    """What a builder knows: the env id, the agent's seed and the co-op game's options."""

    env_id: str
    seed: int | None
    env_kwargs: dict[str, Any]


Builder = Callable[[str, BuildContext], Any]
_BUILT_IN_KINDS = ("random", "heuristic", "search", "fast", "model", "shipped", "weights")
_KINDS: dict[str, Builder] = {}


def register_kind(prefix: str, build: Builder) -> None:
    """Make ``PREFIX:ARG`` specs call ``build(ARG, context)`` (an object with ``act(obs, mask)``)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", prefix) or prefix in _BUILT_IN_KINDS:
        raise ValueError(f"cannot register the spec kind {prefix!r}")
    _KINDS[prefix] = build


def _search_keywords() -> tuple[str, ...]:
    skip = {"self", "num_players", "persian_deck", "heuristic_params", "rng", "seed", "engine",
            "rollout_policy"}
    return (*(p for p in inspect.signature(CoopSearchExpert.__init__).parameters if p not in skip),
            _ROLLOUT_KEY)


_ROLLOUT_KEY = "rollout"  # search:rollout=POLICY: the policy that plays the search's rollouts


def _search_default(key: str) -> Any:
    return inspect.signature(CoopSearchExpert.__init__).parameters[key].default


def _check_rollout_option(value: str, spec: str) -> str:
    """The value of ``rollout=``: a shipped policy name or the path of a pickle-free policy (never a zip)."""
    if value in shipped_policies() or value.endswith((".json", ".safetensors")) or _is_policy_folder(value):
        return value
    raise AgentSpecError(f"agent {spec!r}: search option rollout must be a shipped policy "
                         f"({', '.join(shipped_policies())}) or a policy's .json path, got {value!r}")


# The bounds of every search option: far above any setting worth playing (the largest measured is 128 x
# 16) and far below what exhausts memory (the dice table alone holds about 1 KB per rollout of a candidate).
SEARCH_BOUNDS: dict[str, tuple[float, float]] = {
    "n_determinizations": (1, 4096),
    "rollouts": (1, 1024),
    "max_candidates": (1, 72),  # a candidate is a legal action, of 72
    "min_rounds": (1, 1024),
    "z_drop": (0.0, 100.0),
    "z_pick": (0.0, 100.0),
}
MAX_SEARCH_ROLLOUTS = 65_536  # n_determinizations x rollouts: the rollouts of one candidate in one move


def _search_number(key: str, value: str, spec: str) -> int | float:
    """The value of a numeric search option, checked against
    [`SEARCH_BOUNDS`][thermopylae_agents.policies.registry.SEARCH_BOUNDS]: whole options take ASCII digits
    only (``1.5``, ``2.0``, ``+3`` are refused, not rounded), the others a decimal number."""
    low, high = SEARCH_BOUNDS[key]
    if not _NUMBER.match(value) or len(value) > 20:
        raise AgentSpecError(f"agent {spec!r}: search option {key} must be a decimal number, got {value!r}")
    if isinstance(low, int):
        if not (value.isascii() and value.isdigit()) or not low <= int(value) <= high:
            raise AgentSpecError(f"agent {spec!r}: {key} must be a whole number >= {low} and at most {high}, "
                                 f"got {value!r}")
        return int(value)
    number = float(value)
    if not low <= number <= high:
        raise AgentSpecError(f"agent {spec!r}: {key} must be a decimal number in {low:g}..{high:g}, "
                             f"got {value!r}")
    return number


def _parse_search_options(text: str, spec: str) -> dict[str, Any]:
    """``N,K`` or ``key=value,...`` into keyword arguments, each option once and within its bounds."""
    options: dict[str, Any] = {}
    positional = ("n_determinizations", "rollouts")
    keywords = _search_keywords()
    for index, part in enumerate(p.strip() for p in text.split(",")):
        if not part:
            raise AgentSpecError(f"agent {spec!r}: empty search option (expected search:N,K)")
        if "=" in part:
            key, value = (s.strip() for s in part.split("=", 1))
            if key not in keywords:
                raise AgentSpecError(f"agent {spec!r}: unknown search option {key!r}; known: "
                                     f"{', '.join(keywords)}")
        elif index < len(positional):
            key, value = positional[index], part
        else:
            raise AgentSpecError(f"agent {spec!r}: give at most N,K positionally, then key=value")
        if key in options:  # search:1,1,rollouts=2 would silently drop one of the two
            raise AgentSpecError(f"agent {spec!r}: search option {key} is given twice")
        if key == _ROLLOUT_KEY:
            options[key] = _check_rollout_option(value, spec)
            continue
        options[key] = _search_number(key, value, spec)
    total = math.prod(options.get(key, _search_default(key)) for key in positional)
    if total > MAX_SEARCH_ROLLOUTS:
        raise AgentSpecError(f"agent {spec!r}: n_determinizations x rollouts = {total} rollouts per "
                             f"candidate, more than {MAX_SEARCH_ROLLOUTS}")
    return options


def _is_model_path(text: str) -> bool:
    return is_path(text)


def _is_policy_folder(text: str) -> bool:
    return is_policy_folder(text)


def parse_spec(spec: str | os.PathLike[str]) -> AgentSpec:
    """Check a spec string and say what it names, loading nothing (raises
    [`AgentSpecError`][thermopylae_agents.policies.registry.AgentSpecError])."""
    text = os.fspath(spec)
    if not isinstance(text, str) or not text.strip():
        raise AgentSpecError("empty agent spec: expected random, heuristic, search[:N,K], a model path, "
                             "fast:PATH or a shipped policy name")
    if len(text) > _MAX_SPEC or not text.isprintable():
        raise AgentSpecError(f"agent spec {text[:60]!r}...: too long or not printable text")
    label = None
    match = _LABEL.match(text)
    if match and ":" not in match.group(1) and "/" not in match.group(1):
        label, text = match.group(1), match.group(2)
    parsed = _parse_unlabelled(text)
    if label is None:
        return parsed
    return AgentSpec(parsed.kind, parsed.argument, label, parsed.options)


def _parse_unlabelled(text: str) -> AgentSpec:
    name, colon, argument = text.partition(":")
    if text in ("random", "heuristic"):
        return AgentSpec(text, "", text)
    if name in ("random", "heuristic"):
        raise AgentSpecError(f"agent {text!r}: {name} takes no options")
    if name == "search":
        options = _parse_search_options(argument, text) if colon else {}
        return AgentSpec("search", argument, text, options)
    if name == "fast":
        if argument in shipped_policies():
            return AgentSpec("shipped", argument, text)
        if not _is_model_path(argument):
            raise AgentSpecError(f"agent {text!r}: fast: needs the path of a saved model (.zip) or a shipped "
                                 "policy name")
        return AgentSpec("fast", argument, text)
    if colon and name in _KINDS:
        return AgentSpec(name, argument, text)
    if text in shipped_policies():
        return AgentSpec("shipped", text, text)
    if text.endswith((".json", ".safetensors")) or _is_policy_folder(text):
        return AgentSpec("weights", text, text)
    if _is_model_path(text):
        return AgentSpec("model", text, text)
    kinds = "".join(f", {k}:ARG" for k in sorted(_KINDS))
    raise AgentSpecError(
        f"unknown agent {text!r}: expected random, heuristic, search[:N,K] (co-op), a model path (.zip), "
        f"fast:PATH, a shipped policy ({', '.join(shipped_policies())}){kinds} or LABEL=SPEC"
    )


def model_path(argument: str) -> str:
    """A model path as given, or the file of a shipped policy when no such path exists."""
    if not Path(argument).exists() and not Path(argument + ".zip").exists():
        stem = argument[:-4] if argument.endswith(".zip") else argument
        if "/" not in stem and os.sep not in stem and stem in shipped_policies():
            return os.fspath(shipped_policy_path(stem))
    return argument


# ------------------------------------------------------------------------------------------- building
def make_agent(
    spec: Any, env_id: str, seed: int | None = None, env_kwargs: dict[str, Any] | None = None
) -> tuple[Any, str]:
    """Build the agent named by ``spec`` for ``env_id``; returns ``(agent, label)``.

    ``spec`` is a spec string (module docstring) or an object with an ``act`` method (returned as is).
    ``seed`` seeds the agent's own generator where it has one. ``env_kwargs`` (co-op: ``num_players``,
    ``persian_deck``) tell the co-op heuristic and search players which game is played.
    """
    env_id = resolve_env_id(env_id)
    if not isinstance(spec, (str, os.PathLike)):
        if hasattr(spec, "act") and callable(spec.act):
            return spec, str(getattr(spec, "name", None) or type(spec).__name__)
        raise AgentSpecError(
            f"agent must be a spec string or an object with act(), got {type(spec).__name__}")
    parsed = parse_spec(spec)
    context = BuildContext(env_id, seed, dict(env_kwargs or {}))
    check_agent_game(parsed, env_id, context.env_kwargs)
    return _build(parsed, context), parsed.label


# The options that change the game a policy sees, with the env's defaults (only the co-op game has any).
_GAME_OPTIONS: dict[str, dict[str, Any]] = {COOP_ID: {"num_players": 1}}


def _game_text(env_id: str, options: dict[str, Any]) -> str:
    shown = [f"{key}={options.get(key, default)}" for key, default in _GAME_OPTIONS.get(env_id, {}).items()]
    return env_id + (f" ({', '.join(shown)})" if shown else "")


def _trained_game(parsed: AgentSpec) -> tuple[str, dict[str, Any]] | None:
    """The env id and game options the policy of ``parsed`` was trained on, read from its description
    (no model is loaded); ``None`` for built-in players and for zips without a description beside them."""
    if parsed.kind in ("shipped", "weights"):
        json_path = description_path(parsed.argument)
    elif parsed.kind in ("model", "fast"):
        model = Path(model_path(parsed.argument))
        stem = model.with_suffix("") if model.suffix == ".zip" else model
        json_path = stem.with_name(stem.name + ".json")
        if not (json_path.is_file() and any(json_path.with_suffix(suffix).is_file()
                                            for suffix in ARRAY_SUFFIXES.values())):
            return None  # no exported pair beside the zip: nothing says what it was trained on
    else:
        return None
    description = read_description(json_path)
    return str(description["env_id"]), dict(description.get("env_options", {}))


def check_agent_game(spec: Any, env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
    """Refuse ([`AgentSpecError`][thermopylae_agents.policies.registry.AgentSpecError], one line naming both
    games) a policy trained on another game than ``env_id`` with ``env_kwargs``; built-in players and agent
    objects pass. Loads no model."""
    if not isinstance(spec, (str, os.PathLike, AgentSpec)):
        return
    parsed = spec if isinstance(spec, AgentSpec) else parse_spec(spec)
    env_id = resolve_env_id(env_id)
    try:
        trained = _trained_game(parsed)
    except ValueError as err:
        raise AgentSpecError(f"agent {parsed.label!r}: {err}") from None
    if trained is None:
        return
    trained_id, trained_options = trained
    played = dict(env_kwargs or {})
    defaults = _GAME_OPTIONS.get(env_id, {})
    same = trained_id == env_id and all(
        trained_options.get(key, default) == played.get(key, default) for key, default in defaults.items())
    if not same:
        raise AgentSpecError(f"agent {parsed.label!r} plays {_game_text(trained_id, trained_options)}, not "
                             f"{_game_text(env_id, played)}: it was trained on that game only")


def _build(parsed: AgentSpec, context: BuildContext) -> Any:
    env_id = context.env_id
    deck = context.env_kwargs.get("persian_deck")
    if parsed.kind == "random":
        return RandomAgent(seed=context.seed)
    if parsed.kind == "heuristic":
        if env_id == COOP_ID:
            return CoopHeuristic(persian_deck=deck)

        return HeuristicGreek() if env_id == GREEK_ID else HeuristicPersian()
    if parsed.kind == "search":
        if env_id != COOP_ID:
            raise AgentSpecError("the search player plays the co-op game only")

        options = {"num_players": context.env_kwargs.get("num_players", 1), "persian_deck": deck}
        options.update(parsed.options)
        if _ROLLOUT_KEY in options:
            options["rollout_policy"] = _safe_policy(
                AgentSpec("weights", options.pop(_ROLLOUT_KEY), parsed.label), COOP_ID)
        try:
            return CoopSearchExpert(seed=context.seed, **options)
        except ValueError as err:
            raise AgentSpecError(f"agent {parsed.label!r}: {err}") from None
    if parsed.kind == "fast":
        return FrozenPolicy(load_model(model_path(parsed.argument)), name=parsed.label)
    if parsed.kind in ("shipped", "weights"):
        return _safe_policy(parsed, env_id)
    if parsed.kind == "model":
        return SB3Agent(model_path(parsed.argument))
    return _KINDS[parsed.kind](parsed.argument, context)


def _safe_policy(parsed: AgentSpec, env_id: str) -> Any:
    """A pickle-free policy (shipped by name, or a ``.json`` path) that must have been trained on
    ``env_id``."""
    try:
        policy = load_safe_policy(parsed.argument)
    except (OSError, ValueError) as err:
        raise AgentSpecError(f"agent {parsed.label!r}: {err}") from None
    if resolve_env_id(policy.env_id) != env_id:
        raise AgentSpecError(f"agent {parsed.label!r} plays {policy.env_id}, not {env_id}")
    return policy


def _rllib_agent(argument: str, context: BuildContext) -> Any:
    """``rllib:PATH``: an exported RLlib policy (NumPy only; Ray is not needed to play it)."""
    try:
        return load_rllib_agent(argument, seed=context.seed)
    except ValueError as err:
        raise AgentSpecError(f"agent 'rllib:{argument}': {err}") from None


register_kind("rllib", _rllib_agent)
