"""Card data for both games, read once from the data files in ``seeds/``.

The files are plain CSV so that a user can replace them (the default Persian deck of the co-op game is a
reconstruction: its red values and bonus marks are not printed in any source we have). Every loader checks
its table and refuses a malformed one with a [`DeckError`][thermopylae_env.cards.DeckError] that names the row
and the problem.

One rule for every deck file and every loader:

* only regular files of at most [`MAX_DECK_FILE_BYTES`][thermopylae_env.cards.MAX_DECK_FILE_BYTES] bytes and
  [`MAX_DECK_ROWS`][thermopylae_env.cards.MAX_DECK_ROWS] rows are read (a folder, a device such as
  ``/dev/zero`` or a FIFO is refused before anything is read; a huge file is refused from its size); a
  malformed CSV row or a cell over [`MAX_CELL_CHARS`][thermopylae_env.cards.MAX_CELL_CHARS] characters is
  refused naming the file and the line;
* a number is an integer, or text of ASCII decimal digits with an optional minus sign: ``1e1``, ``1_0``,
  ``10.0`` and non-ASCII digits are refused;
* a bonus is ``1``/``true``/``yes``/``y`` or ``0``/``false``/``no``/``n``; an empty bonus cell is an
  error (no bonus is written ``0``);
* an error about a file names the file, the line or row and the problem, and quotes nothing of the file
  (a deck path may come from someone else: its contents must not be read out); rows given in Python are
  quoted (shortened).
"""

from __future__ import annotations

import csv
import functools
import io
import numbers
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DeckError",
    "PersianCard",
    "DuelCardType",
    "PERSIAN_DECK_SIZE",
    "SPARTAN_VALUES",
    "seeds_dir",
    "load_spartan_deck",
    "load_persian_deck",
    "default_persian_deck",
    "load_duel_deck",
]

PERSIAN_DECK_SIZE = 28
SPARTAN_VALUES = tuple(range(10, 21))  # the faces a Spartan card can show: 10..20
MAX_CARD_VALUE = 99  # no printed card comes near; a larger number is almost surely a typo


class DeckError(ValueError):
    """A deck table is malformed; the message names the row and the problem."""


@dataclass(frozen=True)
class PersianCard:
    """One Persian card of the co-op game: combat value ``white``, annihilation value ``red``."""

    white: int
    red: int
    bonus: bool


@dataclass(frozen=True)
class DuelCardType:
    """One line of a duel deck list: ``count`` cards named ``name``.

    ``kind`` is ``"attack"`` (Persian Attack card, force 10), ``"force"``, ``"strategy"`` (a multiplier,
    force 0) or ``"discard"`` (Xerxes Commands / Leonidas Strategy, force 0).
    """

    name: str
    kind: str
    force: int
    count: int


def seeds_dir() -> Path:
    """The folder holding the data files: ``seeds/`` of a source checkout, or its copy in a wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_seeds", here.parent / "seeds"):
        if (candidate / "spartan_deck.csv").is_file():
            return candidate
    raise FileNotFoundError(
        f"card data not found: neither {here / '_seeds'} nor {here.parent / 'seeds'} exists"
    )


MAX_DECK_FILE_BYTES = 1024 * 1024  # a deck file is a few hundred bytes; a runaway file is refused at once
MAX_DECK_ROWS = 1000
MAX_CELL_CHARS = 1000


def _read_csv(source: str | os.PathLike[str], what: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of a deck file, refusing before reading anything that is not a regular file
    of at most [`MAX_DECK_FILE_BYTES`][thermopylae_env.cards.MAX_DECK_FILE_BYTES] (a folder, ``/dev/zero``, a
    FIFO, a huge file)."""
    path = Path(source)
    try:
        info = os.stat(path)
    except OSError as err:
        raise DeckError(f"{what}: cannot read {path}: {err.strerror or err}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
        raise DeckError(f"{what}: cannot read {path}: not a regular file ({kind})")
    if info.st_size > MAX_DECK_FILE_BYTES:
        raise DeckError(f"{what}: {path} holds {info.st_size} bytes, more than a deck file may "
                        f"({MAX_DECK_FILE_BYTES})")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_DECK_FILE_BYTES + 1)
    except OSError as err:
        raise DeckError(f"{what}: cannot read {path}: {err.strerror or err}") from None
    if len(data) > MAX_DECK_FILE_BYTES:
        raise DeckError(f"{what}: {path} holds more than {MAX_DECK_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DeckError(
            f"{what}: not a UTF-8 text (CSV) file ({err.reason} at byte {err.start})"
        ) from None
    rows = []
    reader = csv.reader(io.StringIO(text))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as err:
            raise DeckError(f"{what}: line {reader.line_num}: not a valid CSV row ({err})") from None
        if any(len(cell) > MAX_CELL_CHARS for cell in row):
            raise DeckError(f"{what}: line {reader.line_num}: a cell longer than {MAX_CELL_CHARS} characters")
        if any(cell.strip() for cell in row):
            rows.append(row)
        if len(rows) > MAX_DECK_ROWS:
            raise DeckError(f"{what}: more than {MAX_DECK_ROWS} rows (a deck has a few dozen)")
    if not rows:
        raise DeckError(f"{what}: {path} is empty")
    header = [cell.strip().lower() for cell in rows[0]]
    return header, rows[1:]


def _check_header(header: Sequence[str], expected: Sequence[str], what: str) -> None:
    """Refuse a file's header line naming only the expected columns and positions (never its text)."""
    seen: dict[str, int] = {}
    for position, name in enumerate(header, start=1):
        if name in seen:
            raise DeckError(f"{what}: column {position} repeats column {seen[name]} in the header")
        seen[name] = position
    missing = [name for name in expected if name not in seen]
    extra = [str(position) for position, name in enumerate(header, start=1) if name not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing}")
        if extra:
            which = "column at position" if len(extra) == 1 else "columns at positions"
            parts.append(f"unknown {which} {', '.join(extra)}")
        raise DeckError(f"{what}: header must be {list(expected)}: " + ", ".join(parts))


_WHOLE_NUMBER = re.compile(r"-?[0-9]{1,6}", re.ASCII)
_TRUE = ("1", "true", "yes", "y")
_FALSE = ("0", "false", "no", "n")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _shown(value: object, quote: bool) -> str:
    """``", got VALUE"`` for a message (shortened), or nothing when ``value`` comes from a file."""
    return f", got {_short(value)}" if quote else ""


def _int_cell(value: object, column: str, where: str, quote: bool = True) -> int:
    """A whole number: a Python/NumPy integer, or text of ASCII decimal digits with an optional ``-``
    (``1e1``, ``1_0``, ``10.0``, ``nan`` and non-ASCII digits are refused). ``quote``: whether the message
    may show ``value`` (not for a file's cell)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, str)):
        raise DeckError(f"{where}: {column} must be a whole number{_shown(value, quote)}")
    if isinstance(value, numbers.Integral):
        return int(value)
    text = value.strip()
    if not _WHOLE_NUMBER.fullmatch(text):
        raise DeckError(f"{where}: {column} must be a whole number of ASCII digits (no sign but -, fraction "
                        f"or exponent){_shown(value, quote)}")
    return int(text)


def _bonus_cell(value: object, where: str, quote: bool = True) -> bool:
    """``1``/``true``/``yes``/``y`` or ``0``/``false``/``no``/``n`` (any case); an empty cell is an error
    (write ``0`` for no bonus). ``quote``: whether the message may show ``value`` (not for a file's cell)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral) and int(value) in (0, 1):
        return bool(value)
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text == "":
        raise DeckError(f"{where}: bonus is empty: write 0 for no bonus, 1 for a bonus")
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise DeckError(f"{where}: bonus must be 0 or 1 (or true/false, yes/no){_shown(value, quote)}")


PersianRows = Iterable[PersianCard | Mapping[str, object] | Sequence[object]]


def load_persian_deck(source: str | os.PathLike[str] | PersianRows | None = None) -> tuple[PersianCard, ...]:
    """Read and check a Persian deck for the co-op game.

    ``source`` is a CSV path with the header ``white,red,bonus``, or rows given directly (``PersianCard``,
    mappings with those keys, or ``(white, red, bonus)`` sequences); ``None`` gives the default deck.
    The deck must hold exactly 28 cards, each with ``1 <= white <= red`` and bonus 0 or 1.
    """
    if source is None:
        return default_persian_deck()
    what = "Persian deck"
    from_file = isinstance(source, (str, os.PathLike))
    if from_file:
        what = f"{what} {os.fspath(source)}"  # every message of a file names it
        header, raw = _read_csv(source, what)
        _check_header(header, ("white", "red", "bonus"), what)
        entries: list[tuple[str, Mapping[str, object]]] = []
        for number, row in enumerate(raw, start=1):
            where = f"{what} row {number} (line {number + 1})"
            if len(row) != len(header):
                raise DeckError(f"{where}: expected {len(header)} cells, got {len(row)}")
            entries.append((where, dict(zip(header, row, strict=False))))
    else:
        if not isinstance(source, Iterable) or isinstance(source, (bytes, bytearray)):
            raise DeckError(
                f"{what}: expected a CSV path, rows (white, red, bonus) or None, got {type(source).__name__} "
                f"{_short(source)}"
            )
        entries = []
        for number, row in enumerate(source, start=1):
            where = f"{what} row {number}"
            if isinstance(row, PersianCard):
                entries.append((where, {"white": row.white, "red": row.red, "bonus": int(row.bonus)}))
            elif isinstance(row, Mapping):
                keys = set(row)
                if keys != {"white", "red", "bonus"}:
                    raise DeckError(f"{where}: keys must be white, red, bonus; got {sorted(map(str, keys))}")
                entries.append((where, row))
            elif isinstance(row, Sequence) and not isinstance(row, (str, bytes)):
                if len(row) != 3:
                    raise DeckError(f"{where}: expected (white, red, bonus), got {len(row)} values")
                entries.append((where, {"white": row[0], "red": row[1], "bonus": row[2]}))
            else:
                raise DeckError(f"{where}: expected (white, red, bonus){_shown(row, True)}")
    cards = []
    for where, cells in entries:
        white = _int_cell(cells["white"], "white", where, quote=not from_file)
        red = _int_cell(cells["red"], "red", where, quote=not from_file)
        bonus = _bonus_cell(cells["bonus"], where, quote=not from_file)
        if not 1 <= white <= MAX_CARD_VALUE:
            raise DeckError(f"{where}: white {white} is outside 1..{MAX_CARD_VALUE}")
        if not 1 <= red <= MAX_CARD_VALUE:
            raise DeckError(f"{where}: red {red} is outside 1..{MAX_CARD_VALUE}")
        if red < white:
            raise DeckError(f"{where}: red {red} is smaller than white {white} (red must be >= white)")
        cards.append(PersianCard(white, red, bonus))
    if len(cards) != PERSIAN_DECK_SIZE:
        raise DeckError(f"{what}: expected {PERSIAN_DECK_SIZE} cards, got {len(cards)}")
    return tuple(cards)


@functools.cache
def default_persian_deck() -> tuple[PersianCard, ...]:
    """The default Persian deck (``seeds/persian_deck.csv``; red values and bonus marks reconstructed)."""
    return load_persian_deck(seeds_dir() / "persian_deck.csv")


@functools.cache
def load_spartan_deck() -> tuple[int, ...]:
    """The 20 Spartan card values of the co-op game, ascending (``seeds/spartan_deck.csv``)."""
    path = seeds_dir() / "spartan_deck.csv"
    header, raw = _read_csv(path, f"Spartan deck {path}")
    _check_header(header, ("value", "count"), f"Spartan deck {path}")
    values: list[int] = []
    for number, row in enumerate(raw, start=1):
        where = f"Spartan deck {path} row {number}"
        cells = dict(zip(header, row, strict=False))
        value = _int_cell(cells.get("value", ""), "value", where, quote=False)
        count = _int_cell(cells.get("count", ""), "count", where, quote=False)
        if value not in SPARTAN_VALUES or count < 0:
            raise DeckError(f"{where}: value must be in 10..20 and count >= 0, got {value}, {count}")
        values += [value] * count
    if len(values) != 20:
        raise DeckError(f"Spartan deck: expected 20 cards, got {len(values)}")
    return tuple(sorted(values))


DUEL_KINDS = ("attack", "force", "strategy", "discard")


@functools.cache
def load_duel_deck(side: str) -> tuple[DuelCardType, ...]:
    """The duel deck list of ``side`` (``"greek"`` or ``"persian"``): 52 cards per side."""
    if side not in ("greek", "persian"):
        raise ValueError(f"side must be 'greek' or 'persian', got {side!r}")
    path = seeds_dir() / f"duel_{side}_deck.csv"
    what = f"{side} duel deck {path}"
    header, raw = _read_csv(path, what)
    _check_header(header, ("name", "kind", "force", "count"), what)
    types = []
    for number, row in enumerate(raw, start=1):
        where = f"{what} row {number}"
        cells = dict(zip(header, row, strict=False))
        kind = cells["kind"].strip()
        if kind not in DUEL_KINDS:
            raise DeckError(f"{where}: kind must be one of {DUEL_KINDS}")
        force = _int_cell(cells["force"], "force", where, quote=False)
        count = _int_cell(cells["count"], "count", where, quote=False)
        types.append(DuelCardType(cells["name"].strip(), kind, force, count))
    if sum(t.count for t in types) != 52:
        raise DeckError(f"{what}: expected 52 cards, got {sum(t.count for t in types)}")
    return tuple(types)
