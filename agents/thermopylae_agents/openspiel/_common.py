"""What both OpenSpiel games share: their registration, their state text (data, never a pickle), the
refusal of an outcome a chance node does not list, the stand-in for the engines' random generator that
answers with chance outcomes OpenSpiel has already chosen, and the observer built on a game's observation
pieces.

The state text. OpenSpiel's own serialisation of a Python game's state pickles the state's attributes,
and reading it back unpickles whatever the text holds: a crafted text runs code. The games here write a
state as data instead, one line of JSON, ``{"version": 1, "game": "<the game's string>", "history":
[...]}``: the game with its parameters and the whole history from the initial state, chance outcomes
included. Reading it replays that history through ``apply_action``, which checks every outcome and
action, so a text gives exactly the state that wrote it or is refused (`state_from_text`).

`register_game` puts this in front of OpenSpiel's Python entry points: ``state.serialize()`` and
``game.deserialize_state(text)`` are the games' own methods, and ``pyspiel.serialize_game_and_state`` /
``pyspiel.deserialize_game_and_state`` are wrapped once so that a text naming one of these games is
written and read here; for any other game they call OpenSpiel's own functions unchanged. OpenSpiel's C++
code that serialises and reads back in one go (``random_sim_test``, pickling a ``pyspiel.State``) still
uses its own form internally, on text it has just written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np
import pyspiel

from thermopylae_env.layout import Piece

__all__ = [
    "STATE_TEXT_VERSION",
    "ScriptedChance",
    "PieceObserver",
    "refuse_unlisted_outcome",
    "register_game",
    "state_from_text",
    "state_to_text",
]

STATE_TEXT_VERSION = 1
_STATE_KEYS = ("game", "history", "version")
_TEXT_GAMES: set[str] = set()  # short names of the games whose states are written as data here
_QUOTE = 60  # characters of a refused value quoted in an error message


def register_game(game_type: pyspiel.GameType, game_class: type) -> None:
    """Register ``game_class`` with ``pyspiel`` under ``game_type`` and read and write its states as data
    (see the module docstring), also through ``pyspiel``'s serialise/deserialise functions."""
    pyspiel.register_game(game_type, game_class)
    _TEXT_GAMES.add(game_type.short_name)
    _wrap_openspiel_serialization()


def state_to_text(state: pyspiel.State) -> str:
    """``state`` as one line of JSON: the version, the game's string and the history from the initial
    state (chance outcomes included)."""
    return json.dumps({"version": STATE_TEXT_VERSION, "game": str(state.get_game()),
                       "history": state.history()}, separators=(",", ":"))


def state_from_text(game: pyspiel.Game, text: str) -> pyspiel.State:
    """The state of ``game`` that `state_to_text` wrote as ``text``.

    Anything else is refused with a one-line ``ValueError`` naming the problem, before any state is made
    or while its history is replayed: text longer than any state of the game can need, text that is not
    JSON or not exactly the three keys, another version, a state of another game (or other parameters),
    a history longer than the game's ``max_history_length()``, an entry that is not an action or outcome
    id, and an entry that the state it is applied to refuses (an outcome its chance node does not list,
    an illegal action, an action after the end). A ``text`` that is not a ``str`` is a ``TypeError``.
    """
    if not isinstance(text, str):
        raise TypeError(f"state text must be a str, got {type(text).__name__}")
    name = str(game)
    max_history = game.max_history_length()
    ids = max(game.num_distinct_actions(), game.max_chance_outcomes())
    # Each history entry takes at most its digits and a separator with a space; the rest is the keys and
    # the game's string. The bound comes before parsing, so nothing large is ever parsed.
    limit = 128 + len(name) + max_history * (len(str(ids - 1)) + 2)
    if len(text) > limit:
        raise ValueError(f"state text has {len(text)} characters, more than the {limit} a state of {name} "
                         f"can take")
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError("state text is not JSON (nested too deeply)") from None
    except ValueError as error:
        raise ValueError(f"state text is not JSON ({_one_line(error)})") from None
    if not isinstance(data, dict):
        raise ValueError(f"state text must be a JSON object with the keys {', '.join(_STATE_KEYS)}, not a "
                         f"{_json_type(data)}")
    if sorted(data) != list(_STATE_KEYS):
        raise ValueError(f"state text must have exactly the keys {', '.join(_STATE_KEYS)}, got "
                         f"{_quote(sorted(data))}")
    version, written_for, history = data["version"], data["game"], data["history"]
    if type(version) is not int or version != STATE_TEXT_VERSION:
        raise ValueError(f"state text version must be {STATE_TEXT_VERSION}, got {_quote(version)}")
    if written_for != name:
        raise ValueError(f"state text is a state of {_quote(written_for)}, not of {name}")
    if not isinstance(history, list):
        raise ValueError(f"state text history must be a list of action ids, got {_json_type(history)}")
    if len(history) > max_history:
        raise ValueError(f"state text history has {len(history)} entries, more than the {max_history} of "
                         f"any game of {name}")
    for i, action in enumerate(history):
        if type(action) is not int or not 0 <= action < ids:
            raise ValueError(f"state text history entry {i} is {_quote(action)}, not an action or outcome "
                             f"id 0..{ids - 1}")
    state = game.new_initial_state()
    for i, action in enumerate(history):
        try:
            state.apply_action(action)
        except ValueError as error:
            raise ValueError(f"state text history entry {i} ({action}): {error}") from None
    return state


def _wrap_openspiel_serialization() -> None:
    """Put the games' state text in front of ``pyspiel``'s two module functions, once per process.

    A Python game cannot override the C++ ``Game::DeserializeState`` that
    ``pyspiel.deserialize_game_and_state`` calls (it unpickles), so the module functions themselves are
    wrapped: the game is read from the text first, as OpenSpiel reads it, and only a game of these
    modules is handled here.
    """
    if getattr(pyspiel.deserialize_game_and_state, "_thermopylae_state_text", False):
        return
    openspiel_deserialize = pyspiel.deserialize_game_and_state
    openspiel_serialize = pyspiel.serialize_game_and_state

    def serialize_game_and_state(game: pyspiel.Game, state: pyspiel.State) -> str:
        if game.get_type().short_name not in _TEXT_GAMES:
            return openspiel_serialize(game, state)
        if str(state.get_game()) != str(game):
            raise ValueError(f"the state is a state of {state.get_game()}, not of {game}")
        return (f"# Written by thermopylae_agents.openspiel: the state as data (its history)\n"
                f"[Meta]\nVersion: 1\n\n[Game]\n{game.serialize()}\n[State]\n{state.serialize()}\n")

    def deserialize_game_and_state(text: str) -> tuple[pyspiel.Game, pyspiel.State]:
        game_text, state_text = _sections(text)
        game = pyspiel.deserialize_game(game_text)
        if game.get_type().short_name not in _TEXT_GAMES:
            return openspiel_deserialize(text)
        return game, game.deserialize_state(state_text)

    for wrapper, wrapped in ((serialize_game_and_state, openspiel_serialize),
                             (deserialize_game_and_state, openspiel_deserialize)):
        wrapper.__doc__ = (f"{wrapped.__doc__}\n\nWrapped by thermopylae_agents.openspiel: the states of its "
                           f"games are written and read as data, never unpickled.")
        wrapper.__wrapped__ = wrapped
        wrapper._thermopylae_state_text = True
    pyspiel.serialize_game_and_state = serialize_game_and_state
    pyspiel.deserialize_game_and_state = deserialize_game_and_state


def _sections(text: str) -> tuple[str, str]:
    """The game and state sections of a game-and-state text, split exactly as OpenSpiel's C++
    ``DeserializeGameAndState`` splits them (so the game read here is the game it would load): comment
    lines (``#``) and blank lines are skipped, ``[Meta]``, ``[Game]`` and ``[State]`` must come in this
    order, and each section is its lines joined without the last newline."""
    if not isinstance(text, str):
        raise TypeError(f"a game-and-state text must be a str, got {type(text).__name__}")
    headers = {"[Meta]": 0, "[Game]": 1, "[State]": 2}
    sections: list[list[str]] = [[], [], []]
    current = -1
    for line in text.split("\n"):
        if not line or line[0] == "#":
            continue
        if line in headers:
            if headers[line] != current + 1:
                raise ValueError(f"game-and-state text: {line} out of order (expected [Meta], [Game], "
                                 f"[State])")
            current = headers[line]
        elif current < 0:
            raise ValueError("game-and-state text: a line before the [Meta] section")
        else:
            sections[current].append(line)
    return "\n".join(sections[1]), "\n".join(sections[2])


def _json_type(value: object) -> str:
    names = {dict: "object", list: "list", str: "str", bool: "boolean", int: "integer", float: "number"}
    return names.get(type(value), "null")


def _quote(value: object) -> str:
    """``repr(value)`` cut short, on one line (repr escapes newlines and control characters)."""
    text = repr(value)
    return text if len(text) <= _QUOTE else text[: _QUOTE - 3] + "..."


def _one_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def refuse_unlisted_outcome(outcome: int, listed: Sequence[int], node: str) -> None:
    """Raise a one-line ``ValueError`` unless ``outcome`` is one of ``listed``, the outcomes the chance node
    ``node`` (its name in the message) lists in ``chance_outcomes()``.

    OpenSpiel applies a chance outcome without checking it, so a game must: an outcome the node does not
    list (a card already dealt or not in the deck being dealt, a die face outside 1..6, a card not in the
    victim's hand) would otherwise be played into the engine's state.
    """
    if outcome not in listed:
        raise ValueError(f"chance outcome {outcome} is not an outcome of {node} (its outcomes: "
                         f"{_spans(listed)})")


def _spans(ids: Sequence[int]) -> str:
    """Sorted ids as runs, ``0..5, 9, 12..14``, so that a list of a whole deck stays short."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in runs) or "none"


class ScriptedChance:
    """Stands in for the ``numpy.random.Generator`` a rules engine draws from, and answers each draw with
    chance outcomes chosen beforehand (by OpenSpiel's chance nodes), so the engine itself plays them.

    ``dice`` answers ``integers(1, 7, size=n)`` (the co-op dice), ``picks`` answers
    ``choice(n, size=2, replace=False)`` (the duel's random discards). Any other draw, or a draw that
    asks for more or other outcomes than were given, raises ``RuntimeError``: the engine drew chance that
    this adapter does not make explicit.
    """

    def __init__(self, dice: Sequence[int] = (), picks: Sequence[int] = ()) -> None:
        self._dice = [int(d) for d in dice]
        self._picks = [int(i) for i in picks]

    def integers(self, low: int, high: int, size: int) -> np.ndarray:
        if (low, high) != (1, 7) or size != len(self._dice):
            raise RuntimeError(f"the engine asked for integers({low}, {high}, size={size}); "
                               f"{len(self._dice)} dice were chosen")
        dice, self._dice = self._dice, []
        return np.array(dice, dtype=np.int64)

    def choice(self, n: int, size: int, replace: bool) -> np.ndarray:
        if replace or size != len(self._picks) or not all(0 <= i < n for i in self._picks):
            raise RuntimeError(f"the engine asked for choice({n}, size={size}, replace={replace}); "
                               f"the picks chosen were {self._picks}")
        picks, self._picks = self._picks, []
        return np.array(picks, dtype=np.int64)

    def permutation(self, *args: object, **kwargs: object) -> np.ndarray:
        raise RuntimeError("the engine asked for a shuffle; the OpenSpiel games deal the decks as chance "
                           "nodes")

    def check_used(self) -> None:
        """Raise ``RuntimeError`` if an outcome chosen for the engine was not drawn."""
        if self._dice or self._picks:
            raise RuntimeError(f"chance outcomes chosen but not drawn by the engine: dice {self._dice}, "
                               f"picks {self._picks}")


class PieceObserver:
    """An OpenSpiel Python observer (``tensor``, ``dict``, ``set_from``, ``string_from``) whose tensor is
    laid out by a game's observation pieces.

    The tensor is the engine's observation of the player in both the plain and the perfect-recall
    observation type; the perfect-recall *string* is the state's information-state string (the player's
    whole history as seen), the plain string the state's observation string. ``write`` and the two
    string functions are given by the game module.
    """

    def __init__(
        self,
        iig_obs_type: pyspiel.IIGObservationType | None,
        params: dict | None,
        pieces: Sequence[Piece],
        write: Callable[[object, int, np.ndarray], None],
    ) -> None:
        if params:
            raise ValueError(f"observation parameters are not supported, got {params}")
        obs_type = iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False)
        if not obs_type.public_info or obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER:
            raise ValueError("only the player's own view is provided (public_info=True, "
                             "private_info=SINGLE_PLAYER)")
        self._perfect_recall = bool(obs_type.perfect_recall)
        self._write = write
        self.tensor = np.zeros(pieces[-1].stop, np.float32)
        self.dict = {piece.name: self.tensor[piece.slice].reshape(piece.shape) for piece in pieces}

    def set_from(self, state: pyspiel.State, player: int) -> None:
        """Write ``player``'s view of ``state`` into `tensor` (zeros while the decks are dealt)."""
        self.tensor.fill(0.0)
        self._write(state, player, self.tensor)

    def string_from(self, state: pyspiel.State, player: int) -> str:
        if self._perfect_recall:
            return state.information_state_text(player)
        return state.observation_text(player)
