"""The duel's size as data: the cards of each deck, the opening hand, the hand limit and the troop tokens.

[`DuelConfig`][thermopylae_env.duel.config.DuelConfig] is a small frozen record;
[`FULL_DUEL`][thermopylae_env.duel.config.FULL_DUEL] is the game of the rules contract (52 cards a side, 4
cards dealt, hand limit 7, 10 tokens) and the default of the reference engine
([`thermopylae_env.duel.rules.DuelGame`][]), which plays it exactly as before. A *reduced* duel keeps every
rule and removes cards: a deck is given as the number of cards of each of the nine kinds (at most as many as
the full deck holds), so a reduced game's cards are a subset of the full game's card ids and its observations
keep the full layout and scales (every entry stays in [0, 1]).

[`SMALL_DUELS`][thermopylae_env.duel.config.SMALL_DUELS] names a family of reduced duels, from one small
enough to check by hand to the largest that the exact solver (``thermopylae_agents.gametheory``) takes on a
small machine. A config is data: [`load_duel_config`][thermopylae_env.duel.config.load_duel_config] reads one
from a JSON object and refuses a malformed one with a one-line
[`DuelConfigError`][thermopylae_env.duel.config.DuelConfigError].

In some reduced duels the Persian can end a game before the Greek has moved (his discard cards empty the
Greek's hand each turn until a deck runs out, or his first attack takes every token):
[`DuelConfig.greek_may_never_move`][thermopylae_env.duel.config.DuelConfig.greek_may_never_move] says so, and
the Greek env refuses them, as its ``reset`` would return a finished game; the Persian env, the PettingZoo
view and the solvers play them.

Only the reference engine plays reduced duels. The compiled kernel (``duel/kernel.py``), the vector
engine and the Gymnasium / PettingZoo environments play the full game only.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations_with_replacement

from thermopylae_env.duel.layout import (
    ATTACK_KIND,
    DECK_SIZE,
    DISCARD_KIND,
    HAND_LIMIT,
    NUM_KINDS,
    PERSIAN,
    START_HAND,
    START_TOKENS,
    STRATEGY_KINDS,
    _build_tables,
)

__all__ = [
    "DuelConfig",
    "DuelConfigError",
    "FULL_DUEL",
    "MAX_CONFIG_FILE_BYTES",
    "SMALL_DUELS",
    "full_kind_counts",
    "load_duel_config",
    "duel_config_from_mapping",
]

MAX_CONFIG_FILE_BYTES = 64 * 1024  # a config is a few hundred bytes; a runaway file is refused unread

_FIELDS = ("name", "greek", "persian", "start_hand", "hand_limit", "start_tokens")


class DuelConfigError(ValueError):
    """A duel config is malformed; the message names the field and the problem."""


def full_kind_counts() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Cards per kind (0..8) of the full Greek and Persian decks, read from the deck lists."""
    kinds = _build_tables()[0]
    return tuple(k.count for k in kinds[0]), tuple(k.count for k in kinds[1])


def _check_int(value: object, field: str, low: int, high: int) -> int:
    if type(value) is not int:
        raise DuelConfigError(f"duel config: {field} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise DuelConfigError(f"duel config: {field} must be in {low}..{high}, got {value}")
    return value


@dataclass(frozen=True)
class DuelConfig:
    """The size of a duel: cards per kind of each deck (kinds 0..8 as in ``duel/rules.py``), the cards
    dealt to each side, the hand limit at the end of a discard phase and the Greek troop tokens.

    Construction checks every field ([`DuelConfigError`][thermopylae_env.duel.config.DuelConfigError], one
    line)."""

    name: str
    greek: tuple[int, ...]
    persian: tuple[int, ...]
    start_hand: int = START_HAND
    hand_limit: int = HAND_LIMIT
    start_tokens: int = START_TOKENS

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DuelConfigError(f"duel config: name must be a non-empty string, got {self.name!r}")
        full = full_kind_counts()
        for side, field in enumerate(("greek", "persian")):
            counts = getattr(self, field)
            if isinstance(counts, (str, bytes)) or not isinstance(counts, Sequence):
                raise DuelConfigError(f"duel config: {field} must be a list of {NUM_KINDS} counts per kind")
            if len(counts) != NUM_KINDS:
                raise DuelConfigError(
                    f"duel config: {field} must hold {NUM_KINDS} counts (kinds 0..8), got {len(counts)}")
            for k, n in enumerate(counts):
                _check_int(n, f"{field}[{k}]", 0, full[side][k])
            object.__setattr__(self, field, tuple(counts))
        _check_int(self.hand_limit, "hand_limit", 1, HAND_LIMIT)
        _check_int(self.start_hand, "start_hand", 1, self.hand_limit)
        _check_int(self.start_tokens, "start_tokens", 1, START_TOKENS)
        if sum(self.greek) < self.start_hand:
            raise DuelConfigError(
                f"duel config: the Greek deck holds {sum(self.greek)} cards, fewer than start_hand "
                f"{self.start_hand}")
        if sum(self.persian) < self.start_hand + 1:
            raise DuelConfigError(
                f"duel config: the Persian deck holds {sum(self.persian)} cards; it needs start_hand + 1 = "
                f"{self.start_hand + 1} (the deal and a first draw)")

    @property
    def is_full(self) -> bool:
        """Whether this is the full game of the rules contract (whatever its name)."""
        return (self.greek, self.persian, self.start_hand, self.hand_limit, self.start_tokens) == (
            *full_kind_counts(), START_HAND, HAND_LIMIT, START_TOKENS)

    def greek_may_never_move(self) -> str | None:
        """Why a game of this duel can end before the Greek's first decision, or ``None`` when it cannot.

        The Greek decides in his discard phase whenever his hand is not empty, so the game ends before he
        moves exactly when the Persian can keep that hand empty at every Greek discard phase until the end:
        ``ceil(h / 2)`` discard cards (kind 8, two Greek cards each) on turn 1, where ``h`` is the Greek's
        first hand, and one on each later turn in which the Greek draws. Deck orders fall every way with
        some chance, so what the deal can allow, some game does. The game then ends (1) when the Greek or
        the Persian deck runs out first, or (2) by the attack of turn 1: the Persian's first hand holds
        every card he can attack with (each later draw must be a discard card), and one attack of them all
        takes at least as many tokens as any split of them. ``tests/env/duel/test_duel_config.py`` holds
        this to an exhaustive search of the reference engine over a space of small duels.
        """
        greek_cards, persian_cards = sum(self.greek), sum(self.persian)
        discard_cards = self.persian[DISCARD_KIND]
        first_hand = min(self.start_hand + 1, greek_cards)  # the deal and turn 1's draw, if any is left
        needed = -(-first_hand // 2)
        if needed > discard_cards:
            return None
        greek_draws = greek_cards - first_hand  # turns 2.. in which the Greek draws, while both decks last
        persian_turns = persian_cards - self.start_hand - 1  # turns 2.. that begin with a Persian draw
        if needed + min(greek_draws, persian_turns) <= discard_cards:
            deck = "Greek" if greek_draws <= persian_turns else "Persian"
            return (f"the Persian's {discard_cards} discard card(s) can empty the Greek's hand at every turn "
                    f"until the {deck} deck runs out")
        others = self.start_hand + 1 - needed
        tokens = _best_attack(self.persian, others) // 10
        if tokens >= self.start_tokens:
            return (f"the Persian's discard cards can empty the Greek's first hand and an attack of the "
                    f"other {others} card(s) of his first hand takes {tokens} token(s), start_tokens is "
                    f"{self.start_tokens}")
        return None

    def deck_ids(self, card_kinds: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The card ids of each deck, ascending: the first ``greek[k]`` (``persian[k]``) ids of each kind."""
        decks = []
        for side, counts in enumerate((self.greek, self.persian)):
            left = list(counts)
            ids = []
            for card in range(side * DECK_SIZE, (side + 1) * DECK_SIZE):
                if left[card_kinds[card]]:
                    left[card_kinds[card]] -= 1
                    ids.append(card)
            decks.append(tuple(ids))
        return decks[0], decks[1]

    def to_dict(self) -> dict:
        """The JSON-ready form that
        [`duel_config_from_mapping`][thermopylae_env.duel.config.duel_config_from_mapping] reads back."""
        return {"name": self.name, "greek": list(self.greek), "persian": list(self.persian),
                "start_hand": self.start_hand, "hand_limit": self.hand_limit,
                "start_tokens": self.start_tokens}


def _best_attack(persian: Sequence[int], cards: int) -> int:
    """The largest total of a Persian attack of at most ``cards`` cards of the deck ``persian`` (counts per
    kind): at least one Attack card (kind 0), strategy kinds distinct, no discard card; 0 if none."""
    force = [kind.force for kind in _build_tables()[0][PERSIAN]]
    best = 0
    kinds = [k for k in range(DISCARD_KIND) if persian[k]]
    for size in range(1, cards + 1):
        for chosen in combinations_with_replacement(kinds, size):
            counts = [chosen.count(k) for k in range(NUM_KINDS)]
            if not counts[ATTACK_KIND] or any(counts[k] > persian[k] for k in kinds):
                continue
            if any(counts[k] > 1 for k in STRATEGY_KINDS):
                continue
            total = sum(force[k] * counts[k] for k in kinds) * (1 + sum(counts[k] for k in STRATEGY_KINDS))
            best = max(best, total)  # as rules.combat_total counts it
    return best


def duel_config_from_mapping(data: Mapping) -> DuelConfig:
    """A [`DuelConfig`][thermopylae_env.duel.config.DuelConfig] from a mapping with the fields of
    [`DuelConfig.to_dict`][thermopylae_env.duel.config.DuelConfig.to_dict] (name, greek and persian required;
    unknown keys refused)."""
    if not isinstance(data, Mapping):
        raise DuelConfigError(f"duel config: expected an object, got {type(data).__name__}")
    unknown = sorted(str(key) for key in data if key not in _FIELDS)
    if unknown:
        raise DuelConfigError(
            f"duel config: unknown field(s) {', '.join(unknown)}; known: {', '.join(_FIELDS)}")
    missing = [key for key in ("name", "greek", "persian") if key not in data]
    if missing:
        raise DuelConfigError(f"duel config: missing field(s) {', '.join(missing)}")
    return DuelConfig(**dict(data))


def load_duel_config(source: str | os.PathLike[str]) -> DuelConfig:
    """Read a [`DuelConfig`][thermopylae_env.duel.config.DuelConfig] from a JSON file: an object with the
    fields of [`DuelConfig.to_dict`][thermopylae_env.duel.config.DuelConfig.to_dict].

    As deck files and records are, only a regular file of at most
    [`MAX_CONFIG_FILE_BYTES`][thermopylae_env.duel.config.MAX_CONFIG_FILE_BYTES] is read, UTF-8 JSON: a
    folder, a device (``/dev/zero``), a named pipe (never waited on), a larger file, other bytes and JSON
    nested too deep are each refused with a one-line
    [`DuelConfigError`][thermopylae_env.duel.config.DuelConfigError] naming the file."""
    what = f"duel config {os.fspath(source)[:200]!r}"
    try:
        # O_NONBLOCK: opening a named pipe must not wait for a writer; the file's type is then read from
        # what was opened, so nothing can be swapped in between the check and the read
        fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as error:
        raise DuelConfigError(f"{what}: cannot read ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise DuelConfigError(f"{what}: is a folder, not a config file")
        if not stat.S_ISREG(info.st_mode):
            raise DuelConfigError(f"{what}: not a regular file (a device, pipe or socket)")
        if info.st_size > MAX_CONFIG_FILE_BYTES:
            raise DuelConfigError(f"{what}: {info.st_size} bytes, more than a duel config may "
                                  f"({MAX_CONFIG_FILE_BYTES})")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_CONFIG_FILE_BYTES + 1)
    except OSError as error:
        raise DuelConfigError(f"{what}: cannot read ({error.strerror or error})") from None
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_FILE_BYTES:  # it grew after the check
        raise DuelConfigError(f"{what}: more than a duel config may hold ({MAX_CONFIG_FILE_BYTES} bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DuelConfigError(f"{what}: not UTF-8 text (byte {error.start}: {error.reason})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as error:
        raise DuelConfigError(f"{what}: not valid JSON ({error.msg} at line {error.lineno} column "
                              f"{error.colno})") from None
    except RecursionError:
        raise DuelConfigError(f"{what}: JSON nested too deep (a config is one flat object)") from None
    except ValueError as error:  # e.g. an integer of thousands of digits
        reason = str(error).splitlines()[0][:80]
        raise DuelConfigError(f"{what}: not a usable JSON value ({reason})") from None
    return duel_config_from_mapping(obj)


FULL_DUEL = DuelConfig("full", *full_kind_counts())

# Kinds: 0 Greek Allies / Attack (10), 1..4 force 20..50, 5..7 strategy, 8 discard card (Leonidas / Xerxes).
# Each member keeps hidden hands and a chance deal; "medium" is the largest whose whole tree the NumPy
# solver of thermopylae_agents.gametheory builds and solves in minutes on two cores.
SMALL_DUELS: dict[str, DuelConfig] = {
    config.name: config
    for config in (
        # Greek: Allies 10, Hoplites 40; Persian: Attack x2, Persian Archers 40.
        DuelConfig("tiny", greek=(1, 0, 0, 1, 0, 0, 0, 0, 0), persian=(2, 0, 0, 1, 0, 0, 0, 0, 0),
                   start_hand=1, hand_limit=2, start_tokens=1),
        # Greek: Allies 10, Overlapping Shields 20, Heroic Last Stand;
        # Persian: Attack x2, Bactrian Spearmen 30.
        DuelConfig("small", greek=(1, 1, 0, 0, 0, 1, 0, 0, 0), persian=(2, 0, 1, 0, 0, 0, 0, 0, 0),
                   start_hand=1, hand_limit=2, start_tokens=2),
        # Greek: Allies 10, Overlapping Shields 20, Hoplites 40, Heroic Last Stand; Persian as in "small".
        DuelConfig("medium", greek=(1, 1, 0, 1, 0, 1, 0, 0, 0), persian=(2, 0, 1, 0, 0, 0, 0, 0, 0),
                   start_hand=1, hand_limit=2, start_tokens=2),
    )
}
