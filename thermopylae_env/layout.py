"""The piece of a flat vector that both games' layout modules describe their observations (and the duel its
actions) with, in the manner of OpenSpiel's observer pieces: a name, where it starts, its shape, and the
scale its values are divided by. ``coop.layout`` and ``duel.layout`` lay their pieces out end to end with
[`lay_out`][thermopylae_env.layout.lay_out], so no offset is ever written down by hand."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Piece", "lay_out"]


@dataclass(frozen=True)
class Piece:
    """A named piece of a vector: ``vector[offset : offset + size]`` holds ``shape`` values, each the
    described quantity divided by ``scale`` (1 for one-hots and 0/1 flags)."""

    name: str
    offset: int
    shape: tuple[int, ...]
    scale: float = 1.0
    description: str = ""

    @property
    def size(self) -> int:
        size = 1
        for n in self.shape:
            size *= n
        return size

    @property
    def stop(self) -> int:
        """One past the last entry."""
        return self.offset + self.size

    @property
    def slice(self) -> slice:
        """``slice(offset, stop)``."""
        return slice(self.offset, self.stop)


def lay_out(specs: Iterable[tuple[str, tuple[int, ...], float, str]]) -> tuple[Piece, ...]:
    """Pieces laid end to end in the order given, from (name, shape, scale, description)."""
    pieces = []
    offset = 0
    for name, shape, scale, description in specs:
        piece = Piece(name, offset, tuple(shape), scale, description)
        pieces.append(piece)
        offset = piece.stop
    return tuple(pieces)
