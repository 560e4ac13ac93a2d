"""The duel's Gymnasium vector envs (``gymnasium.make_vec("thermopylae/DuelGreek-v0", num_envs=N)``) over the
vector engine [`DuelVectorEngine`][thermopylae_env.duel.vector_engine.DuelVectorEngine] (``N`` games in one
array, advanced by compiled loops over the games: [`thermopylae_env.duel.vector_engine`][]). The rules, the
action layout (21 actions), the observation layout (56 float32 values) and the masks are those of
[`DuelGame`][thermopylae_env.duel.rules.DuelGame] ([`thermopylae_env.duel.layout`][]);
``tests/env/duel/test_duel_vector.py`` plays thousands of games through both engines with the same shuffles
and discards and compares every observation, mask, reward and result.

Three environments sit on the engine:

* [`DuelGreekVectorEnv`][thermopylae_env.duel.vector.DuelGreekVectorEnv] /
  [`DuelPersianVectorEnv`][thermopylae_env.duel.vector.DuelPersianVectorEnv] (the ``vector_entry_point`` of
  ``thermopylae/DuelGreek-v0`` and ``thermopylae/DuelPersian-v0``): one side against a built-in opponent whose
  moves happen inside ``step``: ``"heuristic"`` (the compiled twin of ``thermopylae_env.duel.opponents``,
  [`thermopylae_env.duel.opponents_kernel`][], checked move for move against it), ``"random"``, or a batched
  policy, any object with ``act_batch(observations, masks) -> actions``
  ([`BatchOpponent`][thermopylae_env.duel.vector.BatchOpponent]), called once for all the games waiting on it,
  as many times as the opponent has consecutive micro-actions.
* [`DuelSelfPlayVectorEnv`][thermopylae_env.duel.vector.DuelSelfPlayVectorEnv]: both sides, no built-in
  opponent; each row's ``to_move`` says whose turn it is, so one learner playing both sides, or two learners,
  collect from all games at once (the batched counterpart of the PettingZoo AEC view).

Chance: game ``i`` is keyed by its own seed (``reset(seed=s)`` gives it ``s + i``, ``reset(seed=[...])``
one seed per game, ``None`` entries keeping their stream); its ``e``-th game and every random choice in it
(shuffles, the cards hit by a discard card, the random opponent's moves) are a fixed function of that key
and ``e`` (see [`thermopylae_env.duel.kernel`][]), so what a game plays never depends on the other games
or on when they reset.
[`DuelVectorEngine.chance_base`][thermopylae_env.duel.vector_engine.DuelVectorEngine.chance_base] with
[`thermopylae_env.duel.kernel.chance_orders`][] and [`thermopylae_env.duel.kernel.discard_pick`][] replay a
game on [`DuelGame`][thermopylae_env.duel.rules.DuelGame]. (The streams are not those of the single
environment's ``numpy.random.Generator``: the same seed gives other, equally distributed games.)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from thermopylae_env.actions import (
    IllegalActionError,
    as_action_batch,
    as_game_seeds,
    as_reset_mask,
    as_seed,
    check_illegal_action_mode,
    check_illegal_action_penalty,
    check_options,
)
from thermopylae_env.core import ResetNeeded
from thermopylae_env.duel.config import DuelConfig
from thermopylae_env.duel.kernel import OVER, PHASE, PLAYER, TURN, WINNER
from thermopylae_env.duel.layout import GREEK, NUM_ACTIONS, OBS_SIZE, PERSIAN, PLAYER_NAMES
from thermopylae_env.duel.opponents_kernel import OPP_HEURISTIC, OPP_NONE, OPP_RANDOM
from thermopylae_env.duel.vector_engine import (
    ACT_MOVE,
    ACT_NONE,
    ACT_RESTART,
    DuelVectorEngine,
    observe_games,
)

__all__ = [
    "BatchOpponent",
    "DuelVectorEnv",
    "DuelGreekVectorEnv",
    "DuelPersianVectorEnv",
    "DuelSelfPlayVectorEnv",
]


class BatchOpponent(Protocol):
    """A batched player: ``act_batch(observations, masks) -> actions``.

    ``observations`` is float32 ``(k, 56)`` (the opponent's own side, the single env's layout), ``masks``
    bool ``(k, 21)`` with at least one legal action per row; it returns ``k`` legal actions (any integer
    array-like). It is called once per round for all the ``k`` games waiting on it.
    """

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray: ...


def _check_opponent(opponent: Any) -> tuple[int, Any, str]:
    if isinstance(opponent, str) and opponent == "heuristic":
        return OPP_HEURISTIC, None, "heuristic"
    if isinstance(opponent, str) and opponent == "random":
        return OPP_RANDOM, None, "random"
    if hasattr(opponent, "act_batch") and callable(opponent.act_batch):
        return OPP_NONE, opponent, getattr(opponent, "name", type(opponent).__name__)
    if isinstance(opponent, (str, os.PathLike)):
        raise ValueError(
            f"opponent {os.fspath(opponent)!r}: the vector duel env takes 'heuristic', 'random' or an object "
            "with act_batch(observations, masks) -> actions; load a model file yourself and pass it in"
        )
    raise ValueError(
        "opponent must be 'heuristic', 'random' or an object with act_batch(observations, masks) -> actions, "
        f"got {type(opponent).__name__}"
    )


def _check_autoreset(mode: object) -> AutoresetMode:
    mode = AutoresetMode(mode)
    if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        raise ValueError(f"autoreset_mode must be NEXT_STEP or SAME_STEP, got {mode}")
    return mode


class _DuelVectorBase(VectorEnv):
    """What the one-sided and the two-sided vector envs share: buffers, seeding, reset, autoreset."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def _setup(self, num_envs: int, illegal_action: str, illegal_action_penalty: float,
               autoreset_mode: object, copy: bool, parallel: bool | str, render_mode: object,
               record_events: object) -> None:
        if render_mode is not None:
            raise ValueError(f"{type(self).__name__} does not render; render_mode must be None, got "
                             f"{render_mode!r}")
        if record_events:
            raise ValueError(f"{type(self).__name__} does not record events; use the single duel env")
        self.illegal_action = check_illegal_action_mode(illegal_action)
        self.illegal_action_penalty = check_illegal_action_penalty(illegal_action_penalty)
        self.autoreset_mode = _check_autoreset(autoreset_mode)
        self.engine = DuelVectorEngine(num_envs, parallel)
        self.num_envs = self.engine.num_envs
        self.copy = bool(copy)
        self.render_mode = None
        self.metadata = {"autoreset_mode": self.autoreset_mode, "render_modes": []}
        self.single_observation_space = gym.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32)
        self.single_action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._ended = np.zeros(self.num_envs, bool)  # ended at the last step: restarts at the next one
        self._ready = False
        self._broken: str | None = None  # why the games cannot go on (a failed opponent), until reset

    # subclasses define how the kernel is called
    _opp_mode = OPP_NONE
    _opp_side = -1
    _obs_side = -1

    def _after_kernel(self, touched: np.ndarray) -> None:
        """Hook: the batched opponent's rounds (one-sided env)."""

    def _obs(self) -> np.ndarray:
        return self.engine.obs.copy() if self.copy else self.engine.obs

    def _masks(self) -> np.ndarray:
        """A copy of the mask rows a caller may sample from: a finished game waiting for its NEXT_STEP
        reset allows action 0 (which the reset step ignores) instead of nothing, as in the co-op env."""
        masks = self.engine.masks.copy()
        masks[self._ended, 0] = True
        return masks

    def _state_info(self, infos: dict[str, Any]) -> dict[str, Any]:
        eng = self.engine
        n = self.num_envs
        phase = eng.states[:, PHASE].copy()
        phase[phase == OVER] = 0
        for key, value in (("action_mask", self._masks().view(np.int8)), ("phase", phase),
                           ("turn", eng.states[:, TURN].copy()), ("to_move", eng.to_move())):
            infos[key] = value
            infos["_" + key] = np.ones(n, bool)
        return infos

    def _deal(self, games: np.ndarray) -> None:
        eng = self.engine
        eng._what[games] = ACT_RESTART
        eng.run(games, eng._what, eng._actions, self._opp_mode, self._opp_side, self._obs_side)
        self._after_kernel(games)

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start new games (all of them, or those of ``options["reset_mask"]``). ``seed``: one seed (game
        ``i`` gets ``seed + i``) or one per game; ``None`` continues every game's stream (the first reset
        seeds from the OS). Returns ``(observations, infos)``."""
        options = check_options(options, ("reset_mask",))
        as_game_seeds(seed, self.num_envs)  # checked before any game changes
        games = self.engine.all_games
        if "reset_mask" in options:
            mask = as_reset_mask(options["reset_mask"], self.num_envs)
            if not self._ready and not mask.all():
                raise RuntimeError("the first reset must start every game (reset_mask all true)")
            if self._broken is not None:
                self._check_settles(mask)
            games = np.flatnonzero(mask).astype(np.int64)
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
            super().reset(seed=as_seed(seed))  # the VectorEnv's own np_random, for API completeness
        if seed is not None or not self.engine.seeded:
            self.engine.seed(seed)
        try:
            self._deal(games)  # a failing opponent raises here, and the env stays broken
        finally:
            # restarted by the kernel before the opponent was asked, so none of them restarts again at
            # the next step, even when the opponent failed here
            self._ended[games] = False
        # the opponent has moved in every game waiting on it (not only those restarted): none is stuck now
        self._broken = None
        self._ready = True
        return self._obs(), self._state_info({})

    def _waiting_on_caller(self) -> np.ndarray:
        """The running games whose next move is the caller's (every running game, without an opponent)."""
        return self.engine.states[:, PHASE] != OVER

    def _check_settles(self, mask: np.ndarray) -> None:
        """After a failed opponent, a partial reset must restart every game not waiting on the caller: the
        games that ended in the failed step and those left waiting on the opponent.

        Why refuse rather than report such an end at a later step: that step would pay the reward for an
        action the finished game never saw and return its last observation twice; and a game left over
        with no restart pending would take the caller's next action as an illegal move. Refused here,
        before anything moves, each row keeps the position the rules reached (no card lost or dealt twice)
        until the caller restarts it, knowing that its result is dropped with it, as any reset drops a game.
        """
        left = np.flatnonzero(~mask & ~self._waiting_on_caller())
        if left.size:
            shown = ", ".join(str(int(g)) for g in left[:8]) + (", ..." if left.size > 8 else "")
            raise ValueError(
                f"options['reset_mask'] leaves out game {shown}: after the failed step "
                f"({self._broken}) it must also restart every game that ended in that step or waits on the "
                "opponent (their results were never returned)")

    def _checked_actions(self, actions: object) -> np.ndarray:
        if self.closed:
            raise RuntimeError("step() called on a closed environment")
        if not self._ready:
            raise RuntimeError("step() called before reset()")
        if self._broken is not None:
            raise ResetNeeded(f"step() refused: {self._broken}; call reset()")
        return as_action_batch(actions, self.num_envs, NUM_ACTIONS)

    def _check_step(self, actions: object, first_row: int = 0) -> np.ndarray:
        """Everything a step refuses, checked before any game moves: a closed, unreset or broken env, actions
        outside the space, and (``illegal_action="raise"``) an illegal action. ``first_row``: the number
        errors give row 0 (an adapter whose batch holds this env's rows after others)."""
        actions = self._checked_actions(actions)
        if self.illegal_action == "raise":
            eng = self.engine
            legal = eng.masks[np.arange(self.num_envs), actions] | self._restarting()
            if not legal.all():
                g = int(np.flatnonzero(~legal)[0])
                raise IllegalActionError(f"game {g + first_row}: {eng.illegal_reason(g, int(actions[g]))}")
        return actions

    def _restarting(self) -> np.ndarray:
        """The games whose next step starts a new game, ignoring their action: those that ended at the last
        step under NEXT_STEP autoreset. (Those that ended in a step the opponent failed are restarted by the
        reset that step requires: see `_check_settles`.)"""
        return self._ended

    def _advance(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Apply every game's action (restarting the games that ended at the last NEXT_STEP step).

        Returns ``(ended_now, illegal, restarted, winner)``; ``actions`` passed `_check_step`."""
        eng = self.engine
        n = self.num_envs
        restart = self._restarting().copy()
        legal = eng.masks[np.arange(n), actions] | restart
        illegal = ~legal
        reasons = None
        if illegal.any():
            reasons = {int(g): eng.illegal_reason(int(g), int(actions[g])) for g in np.flatnonzero(illegal)}
        what = eng._what
        what[:] = ACT_MOVE
        what[restart] = ACT_RESTART
        what[illegal] = ACT_NONE
        eng._actions[:] = actions
        games = eng.all_games
        eng.run(games, what, eng._actions, self._opp_mode, self._opp_side, self._obs_side)
        try:
            self._after_kernel(games)
        finally:
            # Also when the opponent fails: the games that ended in this step show only the ignored action 0
            # until the reset the failure requires restarts them, and no game restarted here restarts again.
            over = eng.states[:, PHASE] == OVER
            ended = (over & ~restart) | illegal
            if illegal.any():
                eng.masks[illegal] = False
            self._ended = ended.copy()
        self._reasons = reasons
        return ended, illegal, restart, eng.states[:, WINNER].copy()

    def _end_info(self, ended: np.ndarray, illegal: np.ndarray, success: np.ndarray | None) -> dict:
        info: dict[str, Any] = {}
        if ended.any() and success is not None:
            info["is_success"] = success & ended
            info["_is_success"] = ended.copy()
        if illegal.any():
            text = np.full(self.num_envs, None, dtype=object)
            for g, reason in self._reasons.items():
                text[g] = reason
            info["illegal_action"] = illegal.copy()
            info["_illegal_action"] = illegal.copy()
            info["illegal_reason"] = text
            info["_illegal_reason"] = illegal.copy()
        return info

    def _finish_same_step(self, ended: np.ndarray, end_info: dict) -> dict[str, Any]:
        """SAME_STEP autoreset: the ended games restart now; their last observation goes to the infos."""
        infos: dict[str, Any] = {}
        if ended.any():
            idx = np.flatnonzero(ended).astype(np.int64)
            final_obs = np.full(self.num_envs, None, dtype=object)
            final_obs[idx] = list(self.engine.obs[idx].copy())
            self._ended[idx] = False  # restarted here, before its final info is taken (its mask: none)
            self._state_info(end_info)
            for key in ("action_mask", "phase", "turn", "to_move"):
                end_info["_" + key] = ended.copy()
            self._deal(idx)
            infos["final_obs"] = final_obs
            infos["_final_obs"] = ended.copy()
            infos["final_info"] = end_info
            infos["_final_info"] = ended.copy()
            return self._state_info(infos)
        return self._state_info(end_info)

    def action_masks(self) -> np.ndarray:
        """Legal actions of every game, bool ``(num_envs, 21)`` (a copy). A game that ended and waits for
        the next step to restart it (NEXT_STEP, or after a failed opponent) allows only action 0, which
        that step ignores."""
        return self._masks()

    def close_extras(self, **kwargs: Any) -> None:
        self._ready = False


class DuelVectorEnv(_DuelVectorBase):
    """``num_envs`` games of one side of the duel against a built-in opponent, stepped together.

    ## Description
    The duel of ``thermopylae/DuelGreek-v0`` / ``DuelPersian-v0`` (rules in ``seeds/rules_duel.md``) for
    many games at once: ``gymnasium.make_vec("thermopylae/DuelGreek-v0", num_envs=N)`` (or the Persian id)
    builds it; ``vectorization_mode="sync"`` gives a ``SyncVectorEnv`` of single environments instead (the
    same games in distribution, much slower). The opponent's moves happen inside ``step``.

    ## Action Space
    ``MultiDiscrete([21] * num_envs)``; ``single_action_space`` is ``Discrete(21)`` with the single env's
    layout. `action_masks` gives the legal actions as bool ``(num_envs, 21)``, ``infos["action_mask"]``
    as int8. Every mask row of a game the agent must act in has at least one legal action. Out-of-space
    actions raise ``TypeError`` / ``ValueError`` before any game moves. An illegal action (mask 0) ends that
    game as a loss with reward ``illegal_action_penalty``, ``infos["illegal_action"]`` and
    ``infos["illegal_reason"]`` (``illegal_action="loss"``; the observation stays that of the position and
    the row allows only the ignored action 0 until its NEXT_STEP reset), or raises ``IllegalActionError``
    before any game moves (``"raise"``).

    ## Observation Space
    ``Box(0, 1, (num_envs, 56), float32)``, each row the agent's side as in the single env.

    ## Rewards
    Per game: +1 on the step that wins, -1 on the step that loses (also when the loss happens during the
    opponent's moves), 0 otherwise.

    ## Starting State
    Both decks shuffled, four cards each, turn 1 drawn, then the opponent's moves until the agent must act
    (the Persian agent starts at his first discard phase, the Greek agent at his). Game ``i`` draws its
    chance from a stream keyed by its own seed: see the module docstring.

    ## Episode End
    Per game as in the single env: termination only (at most 49 turns), no truncation.

    Autoreset (``metadata["autoreset_mode"]``):

    * ``AutoresetMode.NEXT_STEP`` (default, Gymnasium's own): the step that ends a game returns its last
      observation with ``terminated=True`` and ``infos["is_success"]``; the next ``step`` ignores that
      game's action, starts a new game and returns its first observation with reward 0. Until that reset
      step the game's mask row (`action_masks`, ``infos["action_mask"]``) allows exactly one action,
      action 0, the action the reset step ignores, so that a masked sampler (CleanRL's
      ``logits.masked_fill(~mask, -inf)``) always has a legal action to draw; any action is accepted there.
    * ``AutoresetMode.SAME_STEP``: the ending step already returns the new game's first observation and
      mask; the last observation is in ``infos["final_obs"]`` and that step's info in
      ``infos["final_info"]`` (with Gymnasium's ``"_key"`` masks).

    ``reset(options={"reset_mask": mask})`` restarts only the games where the bool mask is true. Infos hold
    ``action_mask``, ``phase``, ``turn``, ``to_move`` per game, and at game ends ``is_success``.

    ## Arguments
    * ``num_envs`` (int): number of games.
    * ``opponent``: ``"heuristic"`` (default: the compiled twin of ``thermopylae_env.duel.opponents``),
      ``"random"`` (uniform over the legal actions, from the game's chance stream), or an object with
      ``act_batch(observations, masks) -> actions``
      ([`BatchOpponent`][thermopylae_env.duel.vector.BatchOpponent], e.g. a NumPy copy of a trained actor),
      called once per round for all the games waiting on it; an illegal answer raises ``IllegalActionError``
      naming the opponent, and after any failure of the opponent (its own exception too) the env refuses every
      step until ``reset``. ``reset(options={"reset_mask": m})`` may restart only some games, but ``m`` must
      hold every game not waiting on the agent: those left waiting on the opponent and those that ended in
      the failed step (their results were never returned, and the reset drops them; a mask without them is
      refused with a ``ValueError`` naming them, changing nothing). Until then their mask rows allow only the
      ignored action 0, and a game restarted in the failed step is not restarted again. A model file is not
      loaded here: load it and pass it in.
    * ``illegal_action`` (``"loss"`` / ``"raise"``), ``illegal_action_penalty`` (float, -1.0): as in the
      single env. ``render_mode`` must be ``None`` and ``record_events`` ``False``.
    * ``autoreset_mode``: ``AutoresetMode.NEXT_STEP`` (default) or ``AutoresetMode.SAME_STEP``.
    * ``copy`` (bool, True): return a fresh observation array; ``False`` returns the engine's buffer.
    * ``parallel``: ``"auto"`` (default: numba's parallel loop over games from 512 games), ``True``,
      ``False``; the results are the same.

    ## Version History
    * v0: initial version. Since then: a finished row's mask allows the ignored action 0; seeds whose last
      game would pass ``2**64 - 1`` and masked arrays are refused; 64 bits of chance per game (the vector
      engine plays other games from a seed than before, equally distributed; the single env's are the same);
      a partial reset after a failed opponent must restart the games that ended in the failed step.
    """

    side: int = GREEK

    def __init__(
        self,
        num_envs: int = 1,
        opponent: Any = "heuristic",
        illegal_action: str = "loss",
        illegal_action_penalty: float = -1.0,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        parallel: bool | str = "auto",
        render_mode: str | None = None,
        record_events: bool = False,
        side: int | None = None,
        config: DuelConfig | None = None,
    ) -> None:
        if config is not None and not config.is_full:
            raise ValueError(f"the vector duel env plays the full game only, not the {config.name!r} duel: "
                             "use DuelGreekEnv/DuelPersianEnv(config=...) (the reference engine)")
        if side is not None:
            if side not in (GREEK, PERSIAN):
                raise ValueError(f"side must be {GREEK} (Greek) or {PERSIAN} (Persian), got {side!r}")
            self.side = side
        self._opp_mode, self._opponent, self.opponent_label = _check_opponent(opponent)
        self._setup(num_envs, illegal_action, illegal_action_penalty, autoreset_mode, copy, parallel,
                    render_mode, record_events)
        self.opponent_side = 1 - self.side
        self._opp_side = self.opponent_side
        self._obs_side = self.side
        self._opp_obs = np.zeros((self.num_envs, OBS_SIZE), np.float32)

    def _waiting_on_caller(self) -> np.ndarray:
        st = self.engine.states
        return (st[:, PHASE] != OVER) & (st[:, PLAYER] == self.side)

    def set_opponent(self, opponent: Any) -> None:
        """Change the opponent (same values as the ``opponent`` argument). Between steps every running
        game waits on the agent, so the new opponent takes over at its next move, in every game."""
        self._opp_mode, self._opponent, self.opponent_label = _check_opponent(opponent)

    def _after_kernel(self, touched: np.ndarray) -> None:
        """The batched opponent's rounds: one ``act_batch`` call for all games waiting on it, until none.
        A failing opponent (it raises, or answers badly) leaves games waiting on it: the env then refuses
        every step until ``reset``, as the single env does."""
        if self._opponent is None:
            return
        try:
            while self._opponent_round():
                pass
        except IllegalActionError as err:
            self._broken = str(err)
            raise IllegalActionError(f"{err}; the env refuses further steps until reset()") from err
        except BaseException as err:
            self._broken = (f"the {PLAYER_NAMES[self.opponent_side]} opponent ({self.opponent_label}) raised "
                            f"{type(err).__name__}")
            raise

    def _opponent_round(self) -> bool:
        """One ``act_batch`` call for every game waiting on the opponent, checked, then applied; ``False``
        when no game waits on it."""
        eng = self.engine
        st = eng.states
        waiting = np.flatnonzero((st[:, PHASE] != OVER) & (st[:, PLAYER] == self.opponent_side))
        if waiting.size == 0:
            return False
        waiting = waiting.astype(np.int64)
        obs = self._opp_obs[:waiting.size]
        observe_games(st, waiting, self.opponent_side, obs)
        masks = eng.masks[waiting]
        chosen = self._opponent.act_batch(obs.copy(), masks.copy())
        try:
            chosen = as_action_batch(chosen, waiting.size, NUM_ACTIONS)
        except (TypeError, ValueError) as err:
            raise IllegalActionError(f"the {PLAYER_NAMES[self.opponent_side]} opponent "
                                     f"({self.opponent_label}) answered badly: {err}") from err
        bad = ~masks[np.arange(waiting.size), chosen]
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            g = int(waiting[j])
            raise IllegalActionError(
                f"the {PLAYER_NAMES[self.opponent_side]} opponent ({self.opponent_label}) chose "
                f"{int(chosen[j])} in game {g}: {eng.illegal_reason(g, int(chosen[j]))}")
        eng._what[waiting] = ACT_MOVE
        eng._actions[waiting] = chosen
        eng.run(waiting, eng._what, eng._actions, OPP_NONE, self.opponent_side, self.side)
        return True

    def step(self, actions: object) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One action per game (shape ``(num_envs,)``); see the class docstring for autoreset."""
        actions = self._check_step(actions)
        ended, illegal, _, winner = self._advance(actions)
        rewards = np.zeros(self.num_envs, np.float64)
        won = ended & ~illegal & (winner == self.side)
        rewards[ended] = -1.0
        rewards[won] = 1.0
        rewards[illegal] = self.illegal_action_penalty
        end_info = self._end_info(ended, illegal, won)
        truncated = np.zeros(self.num_envs, bool)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            return self._obs(), rewards, ended, truncated, self._state_info(end_info)
        infos = self._finish_same_step(ended, end_info)
        return self._obs(), rewards, ended, truncated, infos


class DuelGreekVectorEnv(DuelVectorEnv):
    __doc__ = DuelVectorEnv.__doc__
    side = GREEK


class DuelPersianVectorEnv(DuelVectorEnv):
    __doc__ = DuelVectorEnv.__doc__
    side = PERSIAN


class DuelSelfPlayVectorEnv(_DuelVectorBase):
    """``num_envs`` duel games with both sides played by the caller: the batched self-play interface.

    ## Description
    No built-in opponent: in each game the player to act (``infos["to_move"]``,
    [`to_move`][thermopylae_env.duel.vector.DuelSelfPlayVectorEnv.to_move]: ``GREEK = 0``, ``PERSIAN = 1``)
    moves, so one learner playing both sides, or two learners (each taking the rows where its side is to
    move), collect from all games at once: the batched counterpart of the PettingZoo AEC view
    (``thermopylae_env.duel_v1``).

    ## Action Space
    ``MultiDiscrete([21] * num_envs)``: one action per game, for the side to move there. Masks, illegal
    actions and out-of-space actions as in [`DuelVectorEnv`][thermopylae_env.duel.vector.DuelVectorEnv].

    ## Observation Space
    ``Box(0, 1, (num_envs, 56), float32)``: each row the observation of the side to move (of the side that
    made the last move once the game is over).
    [`observe`][thermopylae_env.duel.vector.DuelSelfPlayVectorEnv.observe] gives every game from one side's
    view (e.g. the other learner's last observation of a finished game).

    ## Rewards
    ``(num_envs, 2)`` float: ``[greek, persian]``, +1 / -1 on the step that ends the game, zeros otherwise
    (an illegal action: ``illegal_action_penalty`` for the side that played it, 0 for the other).

    ## Starting State
    As in [`DuelVectorEnv`][thermopylae_env.duel.vector.DuelVectorEnv]; the Persian acts first.

    ## Episode End
    Termination only; autoreset as in [`DuelVectorEnv`][thermopylae_env.duel.vector.DuelVectorEnv]
    (``NEXT_STEP`` default, ``SAME_STEP``): with ``NEXT_STEP`` a finished game's mask row allows only action 0
    until its reset step, which ignores that action.

    ## Arguments
    ``num_envs``, ``illegal_action``, ``illegal_action_penalty``, ``autoreset_mode``, ``copy``,
    ``parallel``, ``render_mode`` (None), ``record_events`` (False): as in
    [`DuelVectorEnv`][thermopylae_env.duel.vector.DuelVectorEnv].

    ## Version History
    * v0: initial version. Since then: a finished row's mask allows the ignored action 0; seeds whose last
      game would pass ``2**64 - 1`` and masked arrays are refused; 64 bits of chance per game (the vector
      engine plays other games from a seed than before, equally distributed; the single env's are the same).
    """

    def __init__(
        self,
        num_envs: int = 1,
        illegal_action: str = "loss",
        illegal_action_penalty: float = -1.0,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        parallel: bool | str = "auto",
        render_mode: str | None = None,
        record_events: bool = False,
    ) -> None:
        self._setup(num_envs, illegal_action, illegal_action_penalty, autoreset_mode, copy, parallel,
                    render_mode, record_events)

    def to_move(self) -> np.ndarray:
        """The side to act in every game (``GREEK``/``PERSIAN``; -1 for a game that is over)."""
        return self.engine.to_move()

    def observe(self, side: int) -> np.ndarray:
        """Every game's observation from ``side``'s view (``GREEK`` or ``PERSIAN``)."""
        if side not in (GREEK, PERSIAN):
            raise ValueError(f"side must be {GREEK} (Greek) or {PERSIAN} (Persian), got {side!r}")
        return self.engine.observe(side)

    def step(self, actions: object) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One action per game, for its side to move; rewards are ``(num_envs, 2)``."""
        actions = self._check_step(actions)
        mover = self.engine.states[:, PLAYER].copy()
        ended, illegal, _, winner = self._advance(actions)
        rewards = np.zeros((self.num_envs, 2), np.float64)
        fair = ended & ~illegal
        rows = np.flatnonzero(fair)
        rewards[rows, winner[rows]] = 1.0
        rewards[rows, 1 - winner[rows]] = -1.0
        bad = np.flatnonzero(illegal)
        rewards[bad, mover[bad]] = self.illegal_action_penalty
        info = self._end_info(ended, illegal, None)
        if ended.any():
            w = np.where(fair, winner, np.where(illegal, 1 - mover, -1))
            info["winner"] = w
            info["_winner"] = ended.copy()
        truncated = np.zeros(self.num_envs, bool)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            return self._obs(), rewards, ended, truncated, self._state_info(info)
        infos = self._finish_same_step(ended, info)
        return self._obs(), rewards, ended, truncated, infos
