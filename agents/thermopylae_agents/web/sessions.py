"""The games and replays of the browser app, held on the server:
[`CoopSession`][thermopylae_agents.web.sessions.CoopSession] (1 to 4 seats, each a person or an agent),
[`DuelSession`][thermopylae_agents.web.sessions.DuelSession] (each side a person or an agent),
[`Replay`][thermopylae_agents.web.sessions.Replay] (a checked record, stepped forward and back) and
[`Store`][thermopylae_agents.web.sessions.Store], which keys them by random ids, frees idle ones and caps
their number.

Every value a page sends is checked here before anything changes
([`RequestError`][thermopylae_agents.web.sessions.RequestError]: a one-line message, HTTP 400;
[`NotFoundError`][thermopylae_agents.web.sessions.NotFoundError]: 404;
[`ClosedError`][thermopylae_agents.web.sessions.ClosedError]: 409, the game was deleted or freed while the
request waited for it). Agents come only from the list the
server offers ([`agent_choices`][thermopylae_agents.web.sessions.agent_choices]: the built-in players, the
shipped pickle-free policies, and the specs given on the command line), so a page cannot name a file. Each
game writes its record to a file of the server's own temporary folder, named by the server; the page downloads
it by the game's id.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from thermopylae_agents.evaluation.replay import agent_for_env, opponent_agent
from thermopylae_agents.policies.registry import check_agent_game, make_agent, shipped_policies
from thermopylae_agents.web.views import (
    coop_card_play,
    coop_labels,
    coop_parts,
    coop_view,
    duel_card_play,
    duel_labels,
    duel_parts,
    duel_view,
    event_lines,
    fight_odds,
    legal_actions,
    policy_hint,
)
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID
from thermopylae_env.duel.layout import PLAYER_NAMES
from thermopylae_env.record_format import GameRecord
from thermopylae_env.records import RecordEpisode, RecordMismatchError, RecordNeedsOpponentError, iter_replay

__all__ = ["HUMAN", "ClosedError", "CoopSession", "DuelSession", "Guard", "NotFoundError", "Replay",
           "RequestError", "SearchWarmup", "Store", "agent_choices", "warm_search"]

HUMAN = "human"
BUILT_IN = ("heuristic", "random")
MAX_SEED = 2**63 - 1
_LOG_LINES = 60
_log = logging.getLogger(__name__)


class RequestError(ValueError):
    """A request the server refuses (HTTP 400): the message says what is wrong, in one line."""


class NotFoundError(LookupError):
    """No game or replay with that id (HTTP 404): never made, finished and freed, or idle too long."""


class ClosedError(LookupError):
    """The game was deleted or freed after the request found it, while it waited for its turn (HTTP 409)."""


class Guard:
    """The lock of one game or replay of the [`Store`][thermopylae_agents.web.sessions.Store], and whether
    the item was closed. A request finds the item, then waits for this lock in a worker thread; a DELETE
    or the idle purge may close the item meanwhile, so ``with guard:`` checks ``closed`` once it holds the
    lock and raises [`ClosedError`][thermopylae_agents.web.sessions.ClosedError] instead of letting the
    request touch a closed env."""

    def __init__(self, item: Any) -> None:
        self.item = item
        self.used = time.monotonic()
        self.closed = False
        self._lock = threading.Lock()

    def __enter__(self) -> Any:
        self._lock.acquire()
        if self.closed:
            self._lock.release()
            raise ClosedError("the game was deleted or freed while this request waited for it")
        return self.item

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def try_acquire(self) -> bool:
        """The lock if no request holds it now (the purge must not wait on the event loop)."""
        return self._lock.acquire(blocking=False)

    def close_held(self) -> None:
        """Close the item; the caller holds the lock, which this releases."""
        try:
            if not self.closed:
                self.closed = True
                if hasattr(self.item, "close"):
                    self.item.close()
        finally:
            self._lock.release()

    def close(self) -> None:
        """Close the item once the request holding it, if any, is done."""
        self._lock.acquire()
        self.close_held()


def _is_search(spec: str) -> bool:
    return spec.partition(":")[0] == "search"


def warm_search() -> None:
    """Play the search once on a solo deal whose first move has several candidates, so that numba compiles
    its rollouts (or loads them from its disk cache) now rather than during a person's first hint."""
    env = gym.make(COOP_ID, num_players=1, disable_env_checker=True)
    try:
        agent = make_agent("search", COOP_ID, seed=0, env_kwargs={"num_players": 1})[0]
        for seed in range(20):  # a deal whose only sensible move is played without rollouts compiles nothing
            obs, info = env.reset(seed=seed)
            if len(agent.evaluate(obs, np.asarray(info["action_mask"], dtype=bool)).estimates) > 1:
                return
    finally:
        env.close()


class SearchWarmup:
    """Whether the ``search`` agent's compiled code is ready in this process: ``"cold"`` (never run),
    ``"warming"`` (the warm-up thread is compiling it), ``"ready"`` (compiled: a search hint or move has
    finished, or the warm-up) or ``"failed"`` (the warm-up raised; the first search still compiles). The
    page reads it to say that a first search hint takes a while; numba compiles once per process, for every
    game and team size."""

    def __init__(self, warm: Callable[[], None] = warm_search) -> None:
        self._warm = warm
        self._lock = threading.Lock()
        self.state = "cold"
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Compile in a daemon thread of low priority: the server answers requests meanwhile."""
        with self._lock:
            if self.state != "cold":
                return
            self.state = "warming"
        self.thread = threading.Thread(target=self._run, name="thermopylae-search-warmup", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(AttributeError, OSError):  # Linux: this thread's own niceness, so that
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)  # requests meanwhile come first
        try:
            self._warm()
        except Exception as err:  # the first search then compiles as it would without a warm-up
            _log.warning("the search warm-up failed: %s", err)
            with self._lock:
                if self.state == "warming":
                    self.state = "failed"
            return
        self.ready()

    def ready(self) -> None:
        with self._lock:
            self.state = "ready"


def agent_choices(extra: Sequence[str] = ()) -> dict[str, list[str]]:
    """The agent specs a page may choose, per env id: the built-in players, the shipped policies of that
    game (by name: pickle-free) and the specs given on the command line that play it."""
    choices: dict[str, list[str]] = {COOP_ID: [*BUILT_IN, "search"], GREEK_ID: list(BUILT_IN),
                                     PERSIAN_ID: list(BUILT_IN)}
    for env_id, specs in choices.items():
        for spec in [*shipped_policies(), *extra]:
            if spec in specs:
                continue
            if _plays(spec, env_id):
                specs.append(spec)
    return choices


def _plays(spec: str, env_id: str) -> bool:
    """Whether the policy ``spec`` plays ``env_id`` with some team size (checked again, for the team size
    of the game, when a game is made)."""
    sizes = (1, 2, 3, 4) if env_id == COOP_ID else (None,)
    for size in sizes:
        try:
            check_agent_game(spec, env_id, {} if size is None else {"num_players": size})
        except ValueError:
            continue
        return True
    return False


def check_seed(seed: Any) -> int:
    """A seed from a request: absent (a fresh one is drawn) or an integer in 0..2**63-1."""
    if seed is None:
        return secrets.randbits(31)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise RequestError(f"seed must be an integer from 0 to {MAX_SEED}, got {_shown(seed)}")
    return seed


def _shown(value: Any, limit: int = 40) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _check_choice(spec: Any, choices: Sequence[str], what: str) -> str:
    if not isinstance(spec, str) or spec not in choices:
        raise RequestError(f"{what} must be one of {', '.join(choices)}; got {_shown(spec)}")
    return spec


def _check_action(action: Any, mask: np.ndarray) -> int:
    if isinstance(action, bool) or not isinstance(action, int):
        raise RequestError(f"action must be an integer action index, got {_shown(action)}")
    if not 0 <= action < len(mask) or not mask[action]:
        raise RequestError(f"action {action} is not legal now; the legal actions are "
                           f"{', '.join(str(a) for a in np.flatnonzero(mask))}")
    return action


class _Session:
    """What both games share: the recorded env, the log of events, hints, the record file."""

    kind = ""

    def __init__(self, env: gym.Env, env_id: str, options: dict[str, Any], agent: str, path: Path,
                 seed: int, hint_choices: Sequence[str], warmup: SearchWarmup | None) -> None:
        self.warmup = warmup
        self.env = RecordEpisode(env, path, env_id=env_id, options=options, agent=agent)
        self.env_id = env_id
        self.path = path
        self.seed = seed
        self.hint_choices = list(hint_choices)
        self._hinters: dict[str, Any] = {}
        self.steps = 0
        self.total = 0.0
        self.obs, self.info = self.env.reset(seed=seed)
        self.log: list[str] = []
        self.logged = 0  # lines ever logged: the page numbers the kept lines from logged - len(log) + 1
        self.last: list[str] = []

    @property
    def state(self) -> Any:
        return self.env.unwrapped.state

    @property
    def mask(self) -> np.ndarray:
        return np.asarray(self.info["action_mask"])

    def _step(self, action: int) -> None:
        self.obs, reward, _, _, self.info = self.env.step(action)
        self.steps += 1
        self.total += float(reward)

    def _told(self, lines: list[str]) -> None:
        self.last = lines
        self.logged += len(lines)
        self.log = (self.log + lines)[-_LOG_LINES:]

    @property
    def log_start(self) -> int:
        """The number of the first line kept in ``log`` (1 until older lines were dropped)."""
        return self.logged - len(self.log) + 1

    def hint(self, spec: Any) -> dict[str, Any]:
        spec = _check_choice(spec, self.hint_choices, "the hint agent")
        if self.state.terminated:
            raise RequestError("the game is over: there is no move to hint")
        if spec not in self._hinters:
            try:
                self._hinters[spec] = self._hint_agent(spec)
            except ValueError as err:
                raise RequestError(str(err)) from None
        hint = policy_hint(self._hinters[spec], self.obs, self.mask, self.label())
        if _is_search(spec) and self.warmup is not None:
            self.warmup.ready()
        return hint

    def record_text(self) -> str:
        """The record so far; an unfinished game's record ends with the line a closed record gets."""
        self.env.flush()
        text = self.path.read_text(encoding="utf-8")
        if not self.state.terminated:
            result = {"type": "result", "steps": self.steps, "finished": False, "return": self.total,
                      "won": None, "reason": None}
            text += json.dumps(result, separators=(",", ":")) + "\n"
        return text

    def close(self) -> None:
        try:
            self.env.close()
        finally:
            self.path.unlink(missing_ok=True)


class CoopSession(_Session):
    """The co-op game with 1 to 4 seats, each ``"human"`` or an agent spec of ``choices``."""

    kind = "coop"

    def __init__(self, seats: Any, seed: Any, path: Path, choices: Sequence[str],
                 warmup: SearchWarmup | None = None) -> None:
        if not isinstance(seats, list) or not 1 <= len(seats) <= 4:
            raise RequestError(f"seats must be a list of 1 to 4 entries, got {_shown(seats)}")
        seats = [_check_choice(s, [HUMAN, *choices], f"seat {k}") for k, s in enumerate(seats)]
        seed = check_seed(seed)
        env = gym.make(COOP_ID, num_players=len(seats), record_events=True, disable_env_checker=True)
        self.agents: list[Any] = []
        try:
            for k, spec in enumerate(seats):
                self.agents.append(None if spec == HUMAN else agent_for_env(spec, env, seed + k)[0])
        except ValueError as err:
            env.close()
            raise RequestError(str(err)) from None
        self.seats = seats
        super().__init__(env, COOP_ID, {"num_players": len(seats)}, "seats: " + ", ".join(seats), path,
                         seed, choices, warmup)
        self._told(event_lines(self.info.get("events", [])))

    def label(self) -> Any:
        return coop_labels(self.env.unwrapped.game, self.state)

    def _hint_agent(self, spec: str) -> Any:
        game = self.env.unwrapped.game
        return make_agent(spec, COOP_ID, seed=self.seed,
                          env_kwargs={"num_players": game.num_players, "persian_deck": game.persian})[0]

    def _to_move(self) -> int | None:
        return None if self.state.terminated else int(self.state.current_player)

    def act(self, action: Any) -> None:
        """The person at the seat to move plays ``action``."""
        seat = self._to_move()
        if seat is None:
            raise RequestError("the game is over")
        if self.agents[seat] is not None:
            raise RequestError(f"seat {seat} is played by {self.seats[seat]}: ask for its move (advance)")
        self._step(_check_action(action, self.mask))
        self._told(event_lines(self.info.get("events", [])))

    def advance(self) -> None:
        """The agent at the seat to move plays one move."""
        seat = self._to_move()
        if seat is None:
            raise RequestError("the game is over")
        agent = self.agents[seat]
        if agent is None:
            raise RequestError(f"seat {seat} is played by a person: choose an action")
        self._step(int(agent(np.array(self.obs, copy=True), self.mask.copy())))
        if _is_search(self.seats[seat]) and self.warmup is not None:
            self.warmup.ready()
        self._told(event_lines(self.info.get("events", [])))

    def view(self) -> dict[str, Any]:
        game, state = self.env.unwrapped.game, self.state
        seat = self._to_move()
        human = seat is not None and self.agents[seat] is None
        view = coop_view(game, state)
        view.update({
            "seats": self.seats, "seed": self.seed, "events": self.last, "log": self.log,
            "log_start": self.log_start,
            "to_move": None if seat is None else ("human" if human else "agent"),
            "legal": legal_actions(self.mask, self.label(), coop_parts(state)) if human else [],
            "odds": fight_odds(game, state, self.mask) if human else [],
            "hand_play": coop_card_play(state, self.mask, view["hands"]) if human else None,
            "hint_agents": self.hint_choices,
        })
        return view


class DuelSession(_Session):
    """The duel, each side ``"human"`` or an agent spec of ``choices`` (at least one side an agent: the
    page cannot hide a hand from the person at the other side). The env is played from the person's side
    (the Greek side when both are agents, whose moves the page asks for with ``advance``); the other side
    is the env's opponent, which replies by itself."""

    kind = "duel"

    def __init__(self, greek: Any, persian: Any, seed: Any, path: Path,
                 choices: dict[str, list[str]]) -> None:
        greek = _check_choice(greek, [HUMAN, *choices[GREEK_ID]], "greek")
        persian = _check_choice(persian, [HUMAN, *choices[PERSIAN_ID]], "persian")
        if greek == HUMAN and persian == HUMAN:
            raise RequestError("a duel needs an agent on at least one side: the page cannot hide a hand "
                               "from the person at the other side")
        seed = check_seed(seed)
        self.side = 1 if persian == HUMAN else 0
        env_id = PERSIAN_ID if self.side else GREEK_ID
        spec = persian if self.side == 0 else greek
        self.players = {"greek": greek, "persian": persian}
        self.watched = HUMAN not in (greek, persian)
        try:
            played, recorded = opponent_agent(spec, env_id)
        except ValueError as err:
            raise RequestError(str(err)) from None
        env = gym.make(env_id, opponent=played, record_events=True, disable_env_checker=True)
        self.agent = None
        own = greek if self.side == 0 else persian
        if own != HUMAN:
            try:
                self.agent = agent_for_env(own, env, seed)[0]
            except ValueError as err:
                env.close()
                raise RequestError(str(err)) from None
        self.opponent = recorded
        super().__init__(env, env_id, {"opponent": recorded}, own, path, seed, choices[env_id], None)
        self._told(event_lines(self.info.get("events", []), viewer=self._viewer))

    @property
    def _viewer(self) -> int | None:
        return None if self.watched else self.side  # a watched game hides nothing

    def label(self) -> Any:
        return duel_labels(self.env.unwrapped.game, self.state, self.side)

    def _hint_agent(self, spec: str) -> Any:
        return make_agent(spec, self.env_id, seed=self.seed)[0]

    def act(self, action: Any) -> None:
        """The person plays ``action``; the opponent's replies are played by the env."""
        if self.state.terminated:
            raise RequestError("the game is over")
        if self.agent is not None:
            raise RequestError(f"the {PLAYER_NAMES[self.side]} side is played by "
                               f"{self.players[PLAYER_NAMES[self.side]]}: ask for its move (advance)")
        self._step(_check_action(action, self.mask))
        self._told(event_lines(self.info.get("events", []), viewer=self._viewer))

    def advance(self) -> None:
        """The agent of the env's side plays one move (the opponent's replies follow within the step)."""
        if self.state.terminated:
            raise RequestError("the game is over")
        if self.agent is None:
            raise RequestError("the duel's agent opponent moves by itself; choose your action")
        self._step(int(self.agent(np.array(self.obs, copy=True), self.mask.copy())))
        self._told(event_lines(self.info.get("events", []), viewer=self._viewer))

    def view(self) -> dict[str, Any]:
        state = self.state
        view = duel_view(self.env.unwrapped.game, state, self.side, self.opponent, reveal=self.watched)
        live = not state.terminated
        human = live and self.agent is None
        game = self.env.unwrapped.game
        view.update({"seed": self.seed, "events": self.last, "log": self.log, "log_start": self.log_start,
                     "players": self.players, "watched": self.watched,
                     "to_move": None if not live else ("human" if human else "agent"),
                     "legal": legal_actions(self.mask, self.label(), duel_parts(state, self.side)) if human
                     else [],
                     "hand_play": duel_card_play(game, state, self.side, self.mask, view["hand"]) if human
                     else None,
                     "hint_agents": self.hint_choices})
        return view


class Replay:
    """A record replayed and checked once, in full (as ``thermopylae replay`` does); each moment's view is
    kept, so stepping back and forth replays nothing. A record is data: it never loads a model it names
    (a duel against a model is refused, with the command that replays it)."""

    kind = "replay"

    def __init__(self, record: GameRecord, name: str) -> None:
        self.name = name
        self.moments: list[dict[str, Any]] = []
        try:
            for moment in iter_replay(record):
                self.moments.append(self._moment(moment))
        except RecordNeedsOpponentError:
            raise RequestError(f"{name}: the duel was played against a model, which a record never loads; "
                               "replay it with: thermopylae replay FILE --opponent MODEL") from None
        except RecordMismatchError as err:
            raise RequestError(f"the record does not replay to the same game: {err}") from None
        except (ValueError, TypeError) as err:
            raise RequestError(f"cannot replay {name}: {err}") from None

    @staticmethod
    def _moment(moment: Any) -> dict[str, Any]:
        base = moment.env.unwrapped
        if hasattr(base, "side"):
            view = duel_view(base.game, base.state, base.side, base.opponent_label)
            lines = event_lines(moment.events)
        else:
            view = coop_view(base.game, base.state)
            lines = event_lines(moment.events)
        view.update({"events": lines, "action_name": moment.action_name, "reward": moment.reward,
                     "legal": [], "to_move": None})
        return view

    def view(self, index: Any) -> dict[str, Any]:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.moments):
            raise RequestError(f"step must be an integer from 0 to {len(self.moments) - 1}, "
                               f"got {_shown(index)}")
        return {"name": self.name, "index": index, "last": len(self.moments) - 1, **self.moments[index]}


class Store:
    """Games and replays by random id, freed after ``idle_seconds`` without a request; at most
    ``max_items`` at once (a new one is refused until one is freed).

    Locks: the store's own lock guards only the table of ids and is never held while waiting for an
    item's [`Guard`][thermopylae_agents.web.sessions.Guard] (the purge only tries it), so a request that
    holds a game's guard may still look ids up, and the two locks cannot deadlock. An item is taken out
    of the table first and closed under its guard afterwards: a request that found it before then
    either finishes first or is refused with ``ClosedError``."""

    def __init__(self, folder: Path, idle_seconds: float = 1800.0, max_items: int = 64) -> None:
        self.folder = folder
        self.idle_seconds = idle_seconds
        self.max_items = max_items
        self._items: dict[str, Guard] = {}
        self._lock = threading.Lock()

    def new_path(self) -> tuple[str, Path]:
        key = secrets.token_urlsafe(18)
        return key, self.folder / f"game-{key}.jsonl"

    def purge(self, now: float | None = None) -> None:
        """Free the items idle for more than ``idle_seconds``, except one a request holds now (it is in
        use, whatever its last lookup says; a later purge frees it)."""
        now = time.monotonic() if now is None else now
        held = []
        with self._lock:
            for key, guard in list(self._items.items()):
                if now - guard.used > self.idle_seconds and guard.try_acquire():
                    del self._items[key]
                    held.append(guard)
        for guard in held:
            guard.close_held()

    def has_room(self) -> None:
        self.purge()
        with self._lock:
            if len(self._items) >= self.max_items:
                raise RequestError(f"the server holds {self.max_items} games and replays already (its "
                                   "limit); finish one or wait until idle ones are freed")

    def add(self, key: str, item: Any) -> str:
        with self._lock:
            if len(self._items) >= self.max_items:
                if hasattr(item, "close"):
                    item.close()
                raise RequestError(f"the server holds {self.max_items} games and replays already (its limit)")
            self._items[key] = Guard(item)
        return key

    def get(self, key: Any, kind: str) -> tuple[Any, Guard]:
        """The item of ``key`` and its guard, which a request enters before it reads or changes the item
        (``NotFoundError`` if there is none of that kind)."""
        self.purge()
        with self._lock:
            guard = self._items.get(key) if isinstance(key, str) else None
            if guard is None or guard.item.kind not in kind.split("|"):
                what = "replay" if kind == "replay" else "game"
                raise NotFoundError(f"no {what} with that id (freed after being idle too long, deleted, or "
                                    "never made)")
            guard.used = time.monotonic()
            return guard.item, guard

    def remove(self, key: str) -> None:
        """Take ``key`` out and close its item once a request holding it is done (waits for that
        request: call it from a worker thread); nothing if the key is gone already."""
        with self._lock:
            guard = self._items.pop(key, None)
        if guard is not None:
            guard.close()

    def close(self) -> None:
        with self._lock:
            guards = list(self._items.values())
            self._items.clear()
        for guard in guards:
            guard.close()

    def __len__(self) -> int:
        return len(self._items)

