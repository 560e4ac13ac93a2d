"""``CoopVectorEnv``: the Gymnasium ``VectorEnv`` of ``thermopylae/Coop-v0`` (``gymnasium.make_vec``) over
the co-op vector engine [`thermopylae_env.coop.vector_engine.CoopVectorEngine`][] (the compiled kernel,
its chance in [`thermopylae_env.coop.chance`][]).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from thermopylae_env.actions import as_reset_mask, check_options
from thermopylae_env.cards import PersianRows
from thermopylae_env.coop.chance import ChanceFn
from thermopylae_env.coop.kernel import MAIN, OVER
from thermopylae_env.coop.layout import NUM_ACTIONS, OBS_SIZE
from thermopylae_env.coop.render import render_coop_rgb
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.vector_engine import CoopVectorEngine, Stepper

__all__ = ["CoopVectorEnv"]


class CoopVectorEnv(VectorEnv):
    """``num_envs`` games of ``thermopylae/Coop-v0`` stepped together by one compiled kernel.

    ## Description
    The co-operative game of ``thermopylae/Coop-v0`` (rules in ``seeds/rules_coop.md``) for many games at
    once: ``gymnasium.make_vec("thermopylae/Coop-v0", num_envs=N)`` builds it (the spec's
    ``vector_entry_point``); ``vectorization_mode="sync"`` gives a ``SyncVectorEnv`` of single environments
    instead (the same games in distribution, much slower). ``tests/env/coop/test_coop_vector.py`` checks
    that, fed the same shuffles and dice, it plays exactly the games of the single environment.

    ## Action Space
    ``MultiDiscrete([72] * num_envs)``; ``single_action_space`` is ``Discrete(72)`` with the layout of
    ``thermopylae/Coop-v0`` (0 retreat, 1 + (v-10)*5 + s fight, 56 + p give, 60 decline, 61 + (v-10)
    discard). [`action_masks`][thermopylae_env.coop.vector.CoopVectorEnv.action_masks] gives the legal actions
    as bool ``(num_envs, 72)`` (for sb3-contrib), ``infos["action_mask"]`` as int8. Out-of-space actions raise
    ``TypeError`` / ``ValueError`` before any game moves. An illegal action (mask 0) ends that game as a loss
    with reward ``illegal_action_penalty``, ``infos["illegal_action"]`` and ``infos["illegal_reason"]``
    (``illegal_action="loss"``, the default; the observation stays that of the position and the mask becomes
    all false, as in the single environment), or raises ``IllegalActionError`` before any game moves
    (``"raise"``).

    ## Observation Space
    ``Box(0, 1, (num_envs, 115), float32)``, each row laid out as in ``thermopylae/Coop-v0``.

    ## Rewards
    Per game: +1 on the winning step, -1 on the losing step, 0 otherwise (plus ``reward_shaping`` as in the
    single environment).

    ## Starting State
    Each game shuffles both decks and deals (solo 4 cards, 2 to 4 players 3 each). Game ``i`` draws its
    chance from a stream keyed by its own seed: ``reset(seed=s)`` gives it ``s + i``, ``reset(seed=[...])``
    one seed per game (``None`` entries keep their stream), ``reset()`` without a seed continues every
    stream (the first one seeds from the OS). See the module docstring.

    ## Episode End
    Per game as in the single environment: termination only, no truncation (a game is at most 26 turns).

    Autoreset: ``metadata["autoreset_mode"]`` says which of Gymnasium's two modes the env was built with.

    * ``AutoresetMode.NEXT_STEP`` (the default, Gymnasium's own): the step that ends a game returns its last
      observation with ``terminated=True`` and ``infos["is_success"]``; the next ``step`` ignores that
      game's action, starts a new game and returns its first observation with reward 0. Until that reset
      step the game's mask row ([`action_masks`][thermopylae_env.coop.vector.CoopVectorEnv.action_masks],
      ``infos["action_mask"]``) allows exactly one action, action 0, the action the reset step ignores, so
      that a masked sampler (CleanRL's ``logits.masked_fill(~mask, -inf)``) always has a legal action to draw;
      any action is accepted there.
    * ``AutoresetMode.SAME_STEP``: the ending step already returns the new game's first observation and
      mask; the last observation is in ``infos["final_obs"]`` (object array; ``infos["_final_obs"]`` marks
      the games) and that step's info (``is_success``, ``illegal_action`` ...) in ``infos["final_info"]``.
      ``thermopylae_env.coop.sb3.CoopSB3VecEnv`` gives SB3 these semantics with ``terminal_observation``.

    ``reset(options={"reset_mask": mask})`` restarts only the games where the bool mask (shape
    ``(num_envs,)``) is true; ``reset_mask`` is the only option, and options must be ``None`` or a dict
    (anything else raises ``TypeError`` / ``ValueError``). Seeds and options are checked before any game is
    re-seeded or restarted.
    Infos hold, as arrays over the games with Gymnasium's ``"_key"`` masks, what the single environment's
    info holds: ``action_mask``, ``phase``, ``current_player``, ``turn``, and at game ends ``is_success``.

    ## Arguments
    * ``num_envs`` (int): number of games.
    * ``num_players``, ``persian_deck``, ``illegal_action``, ``illegal_action_penalty``, ``reward_shaping``:
      as for ``thermopylae/Coop-v0``. ``record_events`` must be ``False``.
    * ``render_mode``: ``None`` or ``"rgb_array"``:
      [`render`][thermopylae_env.coop.vector.CoopVectorEnv.render] returns game 0's table as a (360, 640, 3)
      uint8 picture ([`render_coop_rgb`][thermopylae_env.coop.render.render_coop_rgb];
      needs Pillow), so Gymnasium's vector ``RecordVideo`` wrapper can film it.
    * ``autoreset_mode``: ``AutoresetMode.NEXT_STEP`` (default) or ``AutoresetMode.SAME_STEP`` (or their
      string values ``"NextStep"`` / ``"SameStep"``).
    * ``copy`` (bool, default True): return a fresh observation array from each ``step`` / ``reset``.
      ``False`` returns the engine's buffer itself, which the next call overwrites (faster, for code that
      consumes the observation before it steps again).
    * ``chance``: a [`ChanceFn`][thermopylae_env.coop.chance.ChanceFn] replacing the default chance source
      (tests, replays). What it returns is checked (permutations of the card ids, dice in 1..6) before any
      game is dealt.
    * ``backend`` (str, default ``"auto"``): ``"auto"`` or ``"numba"``. The games are played by one
      kernel (``thermopylae_env.coop.kernel``), compiled by numba on first use and cached on disk (the
      first process after an install says so once, in a log line); where numba cannot be imported,
      ``"auto"`` runs the same kernel source as plain Python (much slower;
      [`backend`][thermopylae_env.coop.vector.CoopVectorEnv.backend] is then ``"python"``) and ``"numba"``
      raises ``ImportError``. The retired ``"numpy"`` backend raises ``ValueError`` saying so.
      ``gymnasium.make_vec("thermopylae/Coop-v0", num_envs=N, backend=...)`` passes it through.

    ## Version History
    The id's version changes with anything that changes the games a seed plays or what a step returns
    (the rules, the default Persian deck, the layouts); the rest is listed under its version.

    * v0: initial version. Since then, with the same games: every mask row a caller may sample from has a
      legal action (action 0 in a finished game's row until its NEXT_STEP reset); ``render_mode=
      "rgb_array"``; seeds, actions and reset options checked by the package's shared rules
      (``thermopylae_env.actions``); the NumPy backend retired (one compiled kernel).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"],
                                "render_fps": 4}

    def __init__(
        self,
        num_envs: int = 1,
        num_players: int = 1,
        persian_deck: str | os.PathLike[str] | PersianRows | None = None,
        illegal_action: str = "loss",
        illegal_action_penalty: float = -1.0,
        reward_shaping: float = 0.0,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        chance: ChanceFn | None = None,
        render_mode: str | None = None,
        record_events: bool = False,
        backend: str = "auto",
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if record_events:
            raise ValueError("CoopVectorEnv does not record events; use thermopylae/Coop-v0 for that")
        mode = AutoresetMode(autoreset_mode)
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode must be NEXT_STEP or SAME_STEP, got {mode}")
        self.engine = CoopVectorEngine(num_envs, num_players, persian_deck, chance, backend)
        self._stepper = Stepper(self.engine, illegal_action, illegal_action_penalty, reward_shaping)
        self.num_envs = self.engine.num_envs
        self.num_players = self.engine.num_players
        self.autoreset_mode = mode
        self.copy = bool(copy)
        self.render_mode = render_mode
        self.metadata = {"autoreset_mode": mode, "render_modes": ["rgb_array"], "render_fps": 4}
        self.single_observation_space = gym.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32)
        self.single_action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._autoreset = np.zeros(self.num_envs, bool)
        self._ready = False

    @property
    def backend(self) -> str:
        """The backend in use: ``"numba"`` (the compiled kernel) or ``"python"`` (the same kernel interpreted,
        where numba cannot be imported): what ``backend="auto"`` resolved to."""
        return self.engine.backend

    @property
    def illegal_action(self) -> str:
        return self._stepper.illegal_action

    @property
    def illegal_action_penalty(self) -> float:
        return self._stepper.illegal_action_penalty

    @property
    def reward_shaping(self) -> float:
        return self._stepper.reward_shaping

    def _obs(self) -> np.ndarray:
        return self.engine.obs.copy() if self.copy else self.engine.obs

    def _masks(self) -> np.ndarray:
        """A copy of the mask rows a caller may sample from: a finished game waiting for its NEXT_STEP
        reset allows action 0 (which the reset step ignores) instead of nothing."""
        masks = self.engine.masks.copy()
        waiting = self._autoreset
        if waiting.any():
            masks[waiting, 0] = True
        return masks

    def _state_info(self, infos: dict[str, Any], phase: np.ndarray | None = None) -> dict[str, Any]:
        eng = self.engine
        n = self.num_envs
        if phase is None:
            phase = eng.phase.copy()
            phase[phase == OVER] = MAIN
        infos["action_mask"] = self._masks().view(np.int8)
        infos["_action_mask"] = np.ones(n, bool)
        infos["phase"] = phase
        infos["_phase"] = np.ones(n, bool)
        infos["current_player"] = eng.current.copy()
        infos["_current_player"] = np.ones(n, bool)
        infos["turn"] = eng.turn.copy()
        infos["_turn"] = np.ones(n, bool)
        return infos

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start new games (all of them, or those of ``options["reset_mask"]``); see the class docstring
        for ``seed``. Returns ``(observations, infos)``. Everything is checked first: a bad seed or bad
        options raise before any game is re-seeded or restarted."""
        checked_seed = self.engine.check_seed(seed)
        games = self._reset_games_of(check_options(options, ("reset_mask",)))
        if checked_seed is not None and isinstance(seed, (int, np.integer)):
            super().reset(seed=int(seed))  # the VectorEnv's own np_random, for API completeness
        if checked_seed is not None or not self.engine.seeded:
            self.engine._apply_seed(checked_seed)
        self.engine.reset_games(games)
        if games is None:
            self._autoreset[:] = False
        else:
            self._autoreset[games] = False
        self._ready = True
        return self._obs(), self._state_info({})

    def _reset_games_of(self, options: dict) -> np.ndarray | None:
        """The games a reset restarts (``None``: all), from checked options."""
        if "reset_mask" not in options:
            return None
        mask = as_reset_mask(options["reset_mask"], self.num_envs)
        if not self._ready and not mask.all():
            raise RuntimeError("the first reset must start every game (reset_mask all true)")
        return np.flatnonzero(mask)

    def step(self, actions: object) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One action per game (shape ``(num_envs,)``); see the class docstring for autoreset."""
        if self.closed:
            raise RuntimeError("step() called on a closed environment")
        if not self._ready:
            raise RuntimeError("step() called before reset()")
        next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        skip = self._autoreset if next_step and self._autoreset.any() else None
        result = self._stepper(actions, skip)
        terminated = result.terminated
        truncated = np.zeros(self.num_envs, bool)
        end_info: dict[str, Any] = {}
        if terminated.any():
            end_info["is_success"] = result.won
            end_info["_is_success"] = terminated.copy()
        if result.illegal is not None:
            illegal = result.illegal
            text = np.full(self.num_envs, None, dtype=object)
            text[illegal] = result.reasons
            end_info["illegal_action"] = illegal
            end_info["_illegal_action"] = illegal.copy()
            end_info["illegal_reason"] = text
            end_info["_illegal_reason"] = illegal.copy()
        if next_step:
            self._autoreset = terminated.copy()
            infos = self._state_info(end_info, result.phase)
            return self._obs(), result.rewards, terminated, truncated, infos
        infos: dict[str, Any] = {}
        if terminated.any():
            ended = np.flatnonzero(terminated)
            final_obs = np.full(self.num_envs, None, dtype=object)
            final_obs[ended] = list(self.engine.obs[ended])
            self._state_info(end_info, result.phase)
            for key in ("action_mask", "phase", "current_player", "turn"):
                end_info["_" + key] = terminated.copy()
            self.engine.reset_games(ended)
            infos["final_obs"] = final_obs
            infos["_final_obs"] = terminated.copy()
            infos["final_info"] = end_info
            infos["_final_info"] = terminated.copy()
        return self._obs(), result.rewards, terminated, truncated, self._state_info(infos)

    def action_masks(self) -> np.ndarray:
        """The legal actions of every game, bool ``(num_envs, 72)`` (a copy). A game that ended and waits
        for its NEXT_STEP reset allows only action 0, which that reset step ignores."""
        return self._masks()

    def render(self) -> np.ndarray | None:
        """Game 0's table as an RGB picture (``render_mode="rgb_array"``), else ``None``."""
        if self.render_mode is None:
            return None
        if not self._ready:
            raise RuntimeError("render() called before reset()")

        game = CoopGame(self.num_players, self.engine.persian)
        # The hidden deck orders are not drawn; any order consistent with the view gives the same picture.
        state = game.state_from_observation(self.engine.obs[0], np.random.default_rng(0))
        state.turn = int(self.engine.turn[0])
        return render_coop_rgb(game, state)

    def chance_tables(self, game: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """See
        [`CoopVectorEngine.chance_tables`][thermopylae_env.coop.vector_engine.CoopVectorEngine.chance_tables]."""
        return self.engine.chance_tables(game)

    def close_extras(self, **kwargs: Any) -> None:
        self._ready = False
