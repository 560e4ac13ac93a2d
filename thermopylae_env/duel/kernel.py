"""The compiled per-game twin of the duel's rules ([`DuelGame`][thermopylae_env.duel.rules.DuelGame]), the
kernel of the vector engine ([`thermopylae_env.duel.vector_engine`][]).

Each function below is one step of the rules, written for one game whose whole state is one int32 row ``s``
(columns named below) and named after the rules' method it mirrors, so that one word finds a rule in both:
[`init`][thermopylae_env.duel.kernel.init] (``DuelGame.init``: the shuffles from the game's chance, then the
deal of ``new_state``), [`draw`][thermopylae_env.duel.kernel.draw],
[`begin_turn`][thermopylae_env.duel.kernel.begin_turn], the discard phase
([`remove_kind`][thermopylae_env.duel.kernel.remove_kind],
[`to_discard`][thermopylae_env.duel.kernel.to_discard],
[`play_discard_card`][thermopylae_env.duel.kernel.play_discard_card],
[`end_discard_phase`][thermopylae_env.duel.kernel.end_discard_phase]), the attack and defence build
([`take_build`][thermopylae_env.duel.kernel.take_build],
[`start_defence`][thermopylae_env.duel.kernel.start_defence]),
[`resolve_combat`][thermopylae_env.duel.kernel.resolve_combat], [`end`][thermopylae_env.duel.kernel.end],
[`apply`][thermopylae_env.duel.kernel.apply] (``DuelGame.apply``),
[`legal_action_mask`][thermopylae_env.duel.kernel.legal_action_mask] and
[`observe`][thermopylae_env.duel.kernel.observe]. The built-in opponents' twins are
[`thermopylae_env.duel.opponents_kernel`][], and the loops over games that step them with the rules
[`thermopylae_env.duel.vector_engine`][]. ``tests/env/duel/test_duel_vector.py`` plays thousands of games
through this kernel and through ``DuelGame`` with the same shuffles and discards and compares every
observation, mask, reward and result.

Chance is counter based: game ``i``'s ``e``-th deal and every random choice in it come from
[`word`][thermopylae_env.duel.kernel.word] (32-bit words hashed from a Weyl sequence and a 64-bit chance base)
at fixed word indices; the chance base is a bijective mix (a four-round Feistel network) of the game's 64-bit
seed key, keyed by ``e``, so two games share their chance only where two 64-bit bases meet (about
``n**2 / 2**65`` pairs among ``n`` games, where one 32-bit base met at ``n**2 / 2**33``). The word indices:
the Greek shuffle uses words 0..50, the Persian one 64..114, the ``p``-th discard-card play that must choose
(the victim holds more than 2 cards) words 128 + 2p and 129 + 2p, the ``m``-th random-opponent move word
1024 + m. So what a game plays depends only on its key and on how many games it has started, and a reference
engine fed [`chance_orders`][thermopylae_env.duel.kernel.chance_orders] and
[`discard_pick`][thermopylae_env.duel.kernel.discard_pick] replays it.

Without numba (``NUMBA_DISABLE_JIT=1``, or numba not installed) the same source runs as plain Python, more
slowly ([`thermopylae_env.jit`][]). Integer arithmetic on chance words is masked to 32 bits so that it gives
the same values in both.
"""

from __future__ import annotations

import numpy as np

from thermopylae_env.duel.layout import (
    ADD_BASE,
    ATTACK_KIND,
    COMMIT,
    DECK_SIZE,
    DECLINE,
    DISCARD_BASE,
    DISCARD_KIND,
    DONE_DISCARDING,
    GREEK,
    HAND_LIMIT,
    MAX_HAND,
    NUM_ACTIONS,
    NUM_ADD_KINDS,
    NUM_CARDS,
    NUM_FORCE_KINDS,
    NUM_KINDS,
    OBS_PIECE,
    PERSIAN,
    PLAY_DISCARD_CARD,
    START_HAND,
    START_TOKENS,
    _build_tables,
)
from thermopylae_env.duel.layout import OBS_SCALE as _LAYOUT_SCALE
from thermopylae_env.jit import key_cache_on, njit

__all__ = [
    "WIDTH", "OVER", "W_MOVES", "card_kinds", "word", "below", "chance_words", "chance_base", "chance_orders",
    "discard_pick", "init", "apply", "legal_action_mask", "observe",
]

OBS_SCALE = np.array(_LAYOUT_SCALE)  # a writeable copy: numba freezes it as a constant
OBS_HAND0 = OBS_PIECE["hand"].offset
OBS_BUILD0 = OBS_PIECE["build"].offset
OBS_OWN_DISC0 = OBS_PIECE["own_discards"].offset
OBS_OPP_DISC0 = OBS_PIECE["opp_discards"].offset
OBS_TABLE0 = OBS_PIECE["table"].offset
OBS_OPP_HAND_SIZE = OBS_PIECE["opp_hand_size"].offset
OBS_OWN_DECK = OBS_PIECE["own_deck"].offset
OBS_OPP_DECK = OBS_PIECE["opp_deck"].offset
OBS_TOKENS = OBS_PIECE["tokens"].offset
OBS_TURN = OBS_PIECE["turn"].offset
OBS_TABLE_TOTAL = OBS_PIECE["table_total"].offset
OBS_BUILD_TOTAL = OBS_PIECE["build_total"].offset
OBS_TO_ACT = OBS_PIECE["to_act"].offset
OBS_IS_PERSIAN = OBS_PIECE["is_persian"].offset

# --- the state row of one game ----------------------------------------------------------------------------
DECK = 0  # 2 x 52 card ids, top first: the Greek order, then the Persian order
POS = DECK + NUM_CARDS  # per side: position of the next card to draw
HAND = POS + 2  # per side MAX_HAND kinds, in the order DuelGame's hand list holds them
HLEN = HAND + 2 * MAX_HAND  # per side: cards in hand
HCNT = HLEN + 2  # per side: hand count per kind
DCNT = HCNT + 2 * NUM_KINDS  # per side: discard pile count per kind
BUILD = DCNT + 2 * NUM_KINDS  # count per kind added to the attack/defence being built
TABLE = BUILD + NUM_KINDS  # count per kind of the Persian attack on the table
ATTACK = TABLE + NUM_KINDS  # total of the attack on the table
TOKENS = ATTACK + 1
TURN = TOKENS + 1
PHASE = TURN + 1  # 0..3 as DuelGame's phases, OVER once the game has ended
PLAYER = PHASE + 1
WINNER = PLAYER + 1
PLAYS = WINNER + 1  # discard-card plays so far that drew chance words
MOVES = PLAYS + 1  # random-opponent moves so far
KEY_LO = MOVES + 1  # the game's 64-bit seed key, as two 32-bit halves (stored signed)
KEY_HI = KEY_LO + 1
EPISODE = KEY_HI + 1  # games started since the key was set
BASE = EPISODE + 1  # chance base of the running game, low 32 bits (stored signed)
BASE_HI = BASE + 1  # its high 32 bits
PLAN_KEY = BASE_HI + 1  # 4 * turn + phase of the heuristic's cached attack/defence plan (-1: none)
PLAN_PLAY = PLAN_KEY + 1  # the cached plan: 1 to play it, 0 to decline
PLAN = PLAN_PLAY + 1  # the cached plan: count per kind 0..7
WIDTH = PLAN + NUM_ADD_KINDS

P_DISC, G_DISC, ATTACK_PHASE, DEFENCE = 0, 1, 2, 3
OVER = 4

M32 = 0xFFFFFFFF
WEYL = 0x9E3779B9
W_GREEK, W_PERSIAN, W_PLAYS, W_MOVES = 0, 64, 128, 1024


def card_kinds() -> np.ndarray:
    """Kind (0..8) of each of the 104 card ids, from the deck lists as ``DuelGame`` reads them."""
    return np.array(_build_tables()[1], dtype=np.int32)


# --- chance ---------------------------------------------------------------------------------------------


@njit(cache=True)
def hash32(x):  # noqa: ANN001, ANN201
    """A 32-bit integer hash (lowbias32): every output bit depends on every input bit."""
    x &= M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & M32
    x ^= x >> 16
    return x


@njit(cache=True)
def word(lo, hi, j):  # noqa: ANN001, ANN201
    """Chance word ``j`` (uniform in 0 .. 2**32 - 1) of the game with chance base ``(lo, hi)``."""
    return hash32(hash32((lo + j * WEYL) & M32) ^ (hi & M32))


@njit(cache=True)
def below(w, n):  # noqa: ANN001, ANN201
    """A word scaled to 0 .. n - 1 (multiply-shift)."""
    return (w * n) >> 32


@njit(cache=True)
def feistel_round(x, e, r):  # noqa: ANN001, ANN201
    """The round function of [`chance_words`][thermopylae_env.duel.kernel.chance_words]: 32 bits of ``x``
    mixed with the episode and round."""
    return hash32(hash32((x & M32) ^ hash32((e + r * WEYL) & M32)) + r)


@njit(cache=True)
def chance_words(key_lo, key_hi, episode):  # noqa: ANN001, ANN201
    """The chance base ``(lo, hi)`` of the ``episode``-th game dealt under the seed key ``(key_lo, key_hi)``:
    a four-round Feistel network over the key's two halves, so for one episode two keys never share it."""
    e = episode & M32
    lo = key_lo & M32
    hi = key_hi & M32
    hi ^= feistel_round(lo, e, 1)
    lo ^= feistel_round(hi, e, 2)
    hi ^= feistel_round(lo, e, 3)
    lo ^= feistel_round(hi, e, 4)
    return lo, hi


def _split(base: int) -> tuple[int, int]:
    base = int(base) & 0xFFFFFFFFFFFFFFFF
    return base & M32, base >> 32


def chance_base(key_lo: int, key_hi: int, episode: int) -> int:
    """The chance base of the ``episode``-th game dealt under the seed key ``(key_lo, key_hi)``, as one
    signed 64-bit integer (it fits an int64 array): the high word, then the low word."""
    lo, hi = chance_words(int(key_lo), int(key_hi), int(episode))
    value = (int(hi) << 32) | int(lo)
    return value - (1 << 64) if value >= 1 << 63 else value


def chance_orders(base: int) -> tuple[list[int], list[int]]:
    """The Greek and Persian deck orders (card ids, top first) [`init`][thermopylae_env.duel.kernel.init]
    makes from ``base`` (a 64-bit chance base, signed or not)."""
    row = np.zeros(WIDTH, np.int32)
    lo, hi = _split(base)
    shuffle(row, lo, hi)
    return row[:DECK_SIZE].tolist(), row[DECK_SIZE:NUM_CARDS].tolist()


def discard_pick(base: int, play: int, hand_size: int) -> list[int]:
    """Positions hit by the ``play``-th choosing discard-card play of the game (``hand_size`` > 2)."""
    lo, hi = _split(base)
    i = below(word(lo, hi, W_PLAYS + 2 * play), hand_size)
    j = below(word(lo, hi, W_PLAYS + 2 * play + 1), hand_size - 1)
    return [int(i), int(j + 1 if j >= i else j)]


@njit(cache=True)
def shuffle(s, lo, hi):  # noqa: ANN001, ANN201
    """Both decks in order, then Fisher-Yates shuffled by the words of the chance base ``(lo, hi)``."""
    for side in range(2):
        first = DECK + side * DECK_SIZE
        for c in range(DECK_SIZE):
            s[first + c] = side * DECK_SIZE + c
        w0 = W_GREEK if side == GREEK else W_PERSIAN
        for i in range(DECK_SIZE - 1, 0, -1):
            j = below(word(lo, hi, w0 + DECK_SIZE - 1 - i), i + 1)
            t = s[first + i]
            s[first + i] = s[first + j]
            s[first + j] = t


# --- the rules, one game at a time ----------------------------------------------------------------------


@njit(cache=True)
def combat_total(s, first):  # noqa: ANN001, ANN201
    """Sum of forces x (strategy cards + 1) of the counts per kind at ``s[first:first + 8]``."""
    force = 10 * s[first] + 20 * s[first + 1] + 30 * s[first + 2] + 40 * s[first + 3] + 50 * s[first + 4]
    return force * (1 + s[first + 5] + s[first + 6] + s[first + 7])


@njit(cache=True)
def end(s, winner):  # noqa: ANN001, ANN201
    s[PHASE] = OVER
    s[WINNER] = winner


@njit(cache=True)
def draw(s, p, ck):  # noqa: ANN001, ANN201
    """The top card of ``p``'s deck into ``p``'s hand."""
    card = s[DECK + p * DECK_SIZE + s[POS + p]]
    s[POS + p] += 1
    k = ck[card]
    s[HAND + p * MAX_HAND + s[HLEN + p]] = k
    s[HLEN + p] += 1
    s[HCNT + p * NUM_KINDS + k] += 1


@njit(cache=True)
def begin_turn(s, ck):  # noqa: ANN001, ANN201
    """A new turn: the Persian draws (his empty deck wins it for the Greeks), then the Greek."""
    s[TURN] += 1
    if s[POS + PERSIAN] >= DECK_SIZE:
        end(s, GREEK)
        return
    draw(s, PERSIAN, ck)
    if s[POS + GREEK] < DECK_SIZE:
        draw(s, GREEK, ck)
    s[PHASE] = P_DISC
    s[PLAYER] = PERSIAN


@njit(cache=True)
def init(s, ck):  # noqa: ANN001, ANN201
    """A new game (``DuelGame.init``: the shuffles, then the deal and first draw of ``new_state``) from the
    next chance base of the row's seed key."""
    lo, hi = chance_words(int(s[KEY_LO]), int(s[KEY_HI]), int(s[EPISODE]))
    s[EPISODE] += 1
    s[BASE] = lo if lo < 0x80000000 else lo - 0x100000000
    s[BASE_HI] = hi if hi < 0x80000000 else hi - 0x100000000
    shuffle(s, lo, hi)
    for c in range(POS, KEY_LO):  # everything but the decks and the seed columns
        s[c] = 0
    for p in range(2):
        for _ in range(START_HAND):
            draw(s, p, ck)
    s[TOKENS] = START_TOKENS
    s[WINNER] = -1
    s[PLAN_KEY] = -1
    begin_turn(s, ck)


@njit(cache=True)
def to_discard(s, p, k, n):  # noqa: ANN001, ANN201
    s[DCNT + p * NUM_KINDS + k] += n


@njit(cache=True)
def remove_at(s, p, i):  # noqa: ANN001, ANN201
    """Remove the card at hand position ``i`` of ``p`` (later cards move up); returns its kind."""
    first = HAND + p * MAX_HAND
    n = s[HLEN + p]
    k = s[first + i]
    for j in range(i, n - 1):
        s[first + j] = s[first + j + 1]
    s[HLEN + p] = n - 1
    s[HCNT + p * NUM_KINDS + k] -= 1
    return k


@njit(cache=True)
def remove_kind(s, p, k):  # noqa: ANN001, ANN201
    """Remove ``p``'s first card of kind ``k`` (``DuelGame._remove_kind``)."""
    first = HAND + p * MAX_HAND
    for i in range(s[HLEN + p]):
        if s[first + i] == k:
            remove_at(s, p, i)
            return


@njit(cache=True)
def play_discard_card(s, p):  # noqa: ANN001, ANN201
    """``p`` plays its discard card: the opponent discards 2 cards at random (all if fewer)."""
    remove_kind(s, p, DISCARD_KIND)
    to_discard(s, p, DISCARD_KIND, 1)
    v = 1 - p
    n = int(s[HLEN + v])
    if n <= 2:
        for _ in range(n):
            to_discard(s, v, remove_at(s, v, 0), 1)
        return
    lo = int(s[BASE]) & M32
    hi = int(s[BASE_HI]) & M32
    play = int(s[PLAYS])
    s[PLAYS] += 1
    i = below(word(lo, hi, W_PLAYS + 2 * play), n)
    j = below(word(lo, hi, W_PLAYS + 2 * play + 1), n - 1)
    if j >= i:
        j += 1
    hi = i if i > j else j
    lo = j if i > j else i
    to_discard(s, v, remove_at(s, v, hi), 1)
    to_discard(s, v, remove_at(s, v, lo), 1)


@njit(cache=True)
def end_discard_phase(s, p, ck):  # noqa: ANN001, ANN201
    """After ``p``'s discard phase: the Greek's (skipped with an empty hand), then the attack (skipped
    without an Attack card: next turn)."""
    if p == PERSIAN:
        s[PHASE] = G_DISC
        s[PLAYER] = GREEK
        if s[HLEN + GREEK] > 0:
            return
    if s[HCNT + PERSIAN * NUM_KINDS + ATTACK_KIND] > 0:
        s[PHASE] = ATTACK_PHASE
        s[PLAYER] = PERSIAN
        return
    begin_turn(s, ck)


@njit(cache=True)
def take_build(s, p):  # noqa: ANN001, ANN201
    """Take the cards counted in the build out of ``p``'s hand, keeping the others in order."""
    first = HAND + p * MAX_HAND
    need = np.empty(NUM_KINDS, np.int64)
    for k in range(NUM_KINDS):
        need[k] = s[BUILD + k]
    kept = 0
    for i in range(s[HLEN + p]):
        k = s[first + i]
        if need[k] > 0:
            need[k] -= 1
            s[HCNT + p * NUM_KINDS + k] -= 1
        else:
            s[first + kept] = k
            kept += 1
    s[HLEN + p] = kept


@njit(cache=True)
def clear_build(s):  # noqa: ANN001, ANN201
    for k in range(NUM_KINDS):
        s[BUILD + k] = 0


@njit(cache=True)
def start_defence(s, ck):  # noqa: ANN001, ANN201
    """The Greek defends if he holds a card of force > 0, else the attack is resolved undefended."""
    c = HCNT + GREEK * NUM_KINDS
    if s[c] or s[c + 1] or s[c + 2] or s[c + 3] or s[c + 4]:
        s[PHASE] = DEFENCE
        s[PLAYER] = GREEK
        return
    resolve_combat(s, 0, ck)


@njit(cache=True)
def resolve_combat(s, defence, ck):  # noqa: ANN001, ANN201
    """The combat (``DuelGame.resolve_combat``): the Greeks lose (attack - defence) / 10 tokens when the
    attack is larger; the attack goes to the Persian discard pile; no token left ends the game for the
    Persians."""
    attack = s[ATTACK]
    lost = (attack - defence) // 10 if attack > defence else 0
    tokens = s[TOKENS] - lost
    s[TOKENS] = tokens if tokens > 0 else 0
    for k in range(NUM_KINDS):
        to_discard(s, PERSIAN, k, s[TABLE + k])
        s[TABLE + k] = 0
    s[ATTACK] = 0
    if s[TOKENS] <= 0:
        end(s, PERSIAN)
    else:
        begin_turn(s, ck)


@njit(cache=True)
def apply(s, a, ck):  # noqa: ANN001, ANN201
    """``DuelGame.apply``: ``DuelGame.step`` for a legal micro-action ``a`` of the player to act, with any
    automatic resolution after it."""
    p = s[PLAYER]
    if s[PHASE] <= G_DISC:
        if a == PLAY_DISCARD_CARD:
            play_discard_card(s, p)
        elif a < DONE_DISCARDING:
            k = a - DISCARD_BASE
            remove_kind(s, p, k)
            to_discard(s, p, k, 1)
        else:
            end_discard_phase(s, p, ck)
        return
    if a < COMMIT:
        s[BUILD + a - ADD_BASE] += 1
        return
    if s[PHASE] == ATTACK_PHASE:
        if a == COMMIT:
            take_build(s, PERSIAN)
            for k in range(NUM_KINDS):
                s[TABLE + k] = s[BUILD + k]
            clear_build(s)
            s[ATTACK] = combat_total(s, TABLE)
            start_defence(s, ck)
        else:
            clear_build(s)
            begin_turn(s, ck)
        return
    if a == COMMIT:
        take_build(s, GREEK)
        total = combat_total(s, BUILD)
        for k in range(NUM_KINDS):
            to_discard(s, GREEK, k, s[BUILD + k])
        clear_build(s)
        resolve_combat(s, total, ck)
    else:
        clear_build(s)
        resolve_combat(s, 0, ck)


@njit(cache=True)
def legal_action_mask(s, out):  # noqa: ANN001, ANN201
    """``DuelGame.legal_action_mask`` of the player to act into ``out`` (all false once over)."""
    for a in range(NUM_ACTIONS):
        out[a] = False
    phase = s[PHASE]
    if phase == OVER:
        return
    p = s[PLAYER]
    c = HCNT + p * NUM_KINDS
    if phase <= G_DISC:
        out[PLAY_DISCARD_CARD] = s[c + DISCARD_KIND] > 0
        for k in range(NUM_KINDS):
            out[DISCARD_BASE + k] = s[c + k] > 0
        out[DONE_DISCARDING] = s[HLEN + p] <= HAND_LIMIT
        return
    for k in range(NUM_FORCE_KINDS):
        out[ADD_BASE + k] = s[c + k] > s[BUILD + k]
    for k in range(NUM_FORCE_KINDS, NUM_ADD_KINDS):
        out[ADD_BASE + k] = s[c + k] > 0 and s[BUILD + k] == 0
    if phase == ATTACK_PHASE:
        out[COMMIT] = s[BUILD + ATTACK_KIND] > 0
    else:
        out[COMMIT] = (s[BUILD] + s[BUILD + 1] + s[BUILD + 2] + s[BUILD + 3] + s[BUILD + 4]) > 0
    out[DECLINE] = True


@njit(cache=True)
def put(out, j, value):  # noqa: ANN001, ANN201
    """Entry ``j`` of an observation: the raw count as float32 times its scale (as ``DuelGame.observe``)."""
    out[j] = np.float32(value) * OBS_SCALE[j]


@njit(cache=True)
def observe(s, player, out):  # noqa: ANN001, ANN201
    """``DuelGame.observe(state, player)`` into the float32 row ``out`` (each entry written once)."""
    o = 1 - player
    phase = s[PHASE]
    me = phase != OVER and s[PLAYER] == player
    for i in range(4):  # the phase one-hot opens the observation
        out[i] = 1.0 if i == phase else 0.0
    out[OBS_TO_ACT] = 1.0 if me else 0.0
    out[OBS_IS_PERSIAN] = player
    building = me and phase >= ATTACK_PHASE
    for k in range(NUM_KINDS):
        put(out, OBS_HAND0 + k, s[HCNT + player * NUM_KINDS + k])
        put(out, OBS_OWN_DISC0 + k, s[DCNT + player * NUM_KINDS + k])
        put(out, OBS_OPP_DISC0 + k, s[DCNT + o * NUM_KINDS + k])
    for k in range(NUM_ADD_KINDS):
        put(out, OBS_BUILD0 + k, s[BUILD + k] if building else 0)
        put(out, OBS_TABLE0 + k, s[TABLE + k])
    put(out, OBS_OPP_HAND_SIZE, s[HLEN + o])
    put(out, OBS_OWN_DECK, DECK_SIZE - s[POS + player])
    put(out, OBS_OPP_DECK, DECK_SIZE - s[POS + o])
    put(out, OBS_TOKENS, s[TOKENS])
    put(out, OBS_TURN, s[TURN])
    put(out, OBS_TABLE_TOTAL, s[ATTACK])
    put(out, OBS_BUILD_TOTAL, combat_total(s, BUILD) if building else 0)


# What the functions above compile in from other modules: the layout's constants (and what it reads).
key_cache_on(globals(), "thermopylae_env.duel.layout", "thermopylae_env.actions", "thermopylae_env.cards",
             "thermopylae_env.layout")
