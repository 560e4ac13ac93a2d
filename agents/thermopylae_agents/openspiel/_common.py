"""What both OpenSpiel games share: the stand-in for the engines' random generator that answers with
chance outcomes OpenSpiel has already chosen, the refusal of an outcome a chance node does not list, and
the observer built on a game's observation pieces."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyspiel

from thermopylae_env.layout import Piece

__all__ = ["ScriptedChance", "PieceObserver", "refuse_unlisted_outcome"]


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
