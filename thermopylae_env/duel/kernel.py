"""The compiled per-game kernel of the duel's vector engine ([`thermopylae_env.duel.vector`][]).

Each function below is one step of [`thermopylae_env.duel.DuelGame`][thermopylae_env.duel.rules.DuelGame],
written for one game whose whole state is one int32 row ``s`` (columns named below):
[`deal`][thermopylae_env.duel.kernel.deal] (``DuelGame.new_state``),
[`draw`][thermopylae_env.duel.kernel.draw], [`begin_turn`][thermopylae_env.duel.kernel.begin_turn], the
discard phase ([`remove_kind`][thermopylae_env.duel.kernel.remove_kind],
[`play_discard_card`][thermopylae_env.duel.kernel.play_discard_card],
[`end_discard_phase`][thermopylae_env.duel.kernel.end_discard_phase]), the attack and defence build
([`take_build`][thermopylae_env.duel.kernel.take_build],
[`start_defence`][thermopylae_env.duel.kernel.start_defence]),
[`resolve`][thermopylae_env.duel.kernel.resolve] (the combat: ``DuelGame._resolve``),
[`end`][thermopylae_env.duel.kernel.end], [`apply`][thermopylae_env.duel.kernel.apply] (``DuelGame.step``),
[`mask_row`][thermopylae_env.duel.kernel.mask_row] (``legal_action_mask``) and
[`observe`][thermopylae_env.duel.kernel.observe] (``DuelGame.observe``). The built-in opponents are here too:
[`heuristic_persian`][thermopylae_env.duel.kernel.heuristic_persian] /
[`heuristic_greek`][thermopylae_env.duel.kernel.heuristic_greek] are the compiled twins of
``thermopylae_env.duel.opponents`` (compiled, for the loop over games), and
[`random_legal`][thermopylae_env.duel.kernel.random_legal] the random player.
``tests/env/duel/test_duel_vector.py`` plays thousands of games through this kernel and through ``DuelGame``
with the same shuffles and discards and compares every observation, mask, reward and result, and checks the
twins move for move against the Python heuristics.

The loops over games ([`step_serial`][thermopylae_env.duel.kernel.step_serial] /
[`step_parallel`][thermopylae_env.duel.kernel.step_parallel], and the small drivers after them) call the
per-game functions; the parallel one runs the games on all cores with numba's ``prange`` and writes exactly
what the serial one writes (each game reads and writes only its own rows).

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
slowly: the decorator becomes the identity and ``prange`` is ``range``. Integer arithmetic on chance words
is masked to 32 bits so that it gives the same values in both.
"""

from __future__ import annotations

import numpy as np

try:  # numba is the fast path; the source below is also plain Python
    from numba import njit, prange
except ImportError:  # pragma: no cover - exercised where numba is absent
    def njit(*args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda f: f

    prange = range

# --- the duel's layout and rules constants: the ONE place the duel vector code reads them from -----------
from thermopylae_env.duel.layout import (  # noqa: E402
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
)
from thermopylae_env.duel.layout import OBS_SCALE as _LAYOUT_SCALE  # noqa: E402
from thermopylae_env.duel.rules import DuelGame  # noqa: E402

__all__ = [
    "WIDTH", "OVER", "OPP_NONE", "OPP_HEURISTIC", "OPP_RANDOM",
    "card_kinds", "word", "chance_words", "chance_base", "chance_orders", "discard_pick",
    "deal", "apply", "mask_row", "observe", "heuristic_action", "random_legal",
    "step_serial", "step_parallel", "observe_games", "heuristic_games",
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
OPP_NONE, OPP_HEURISTIC, OPP_RANDOM = 0, 1, 2
ACT_NONE, ACT_MOVE, ACT_RESTART = 0, 1, 2

M32 = 0xFFFFFFFF
CHUNK = 256  # games per task of the parallel loop
WEYL = 0x9E3779B9
W_GREEK, W_PERSIAN, W_PLAYS, W_MOVES = 0, 64, 128, 1024
_INF = 1e300  # a kind with no card is never the one dropped


def card_kinds() -> np.ndarray:
    """Kind (0..8) of each of the 104 card ids, as DuelGame reads them from the deck lists."""
    return np.array(DuelGame().card_kinds, dtype=np.int32)


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
    """The Greek and Persian deck orders (card ids, top first) [`deal`][thermopylae_env.duel.kernel.deal]
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
def deal(s, ck):  # noqa: ANN001, ANN201
    """A new game (``DuelGame.new_state``) from the next chance base of the row's seed key."""
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
    resolve(s, 0, ck)


@njit(cache=True)
def resolve(s, defence, ck):  # noqa: ANN001, ANN201
    """The combat: the Greeks lose (attack - defence) / 10 tokens when the attack is larger; the attack
    goes to the Persian discard pile; no token left ends the game for the Persians."""
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
    """``DuelGame.step`` for a legal micro-action ``a`` of the player to act, with any automatic
    resolution after it."""
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
        resolve(s, total, ck)
    else:
        clear_build(s)
        resolve(s, 0, ck)


@njit(cache=True)
def mask_row(s, out):  # noqa: ANN001, ANN201
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


# --- the built-in opponents -----------------------------------------------------------------------------


@njit(cache=True)
def random_legal(s, scratch):  # noqa: ANN001, ANN201
    """A uniformly random legal action, from the game's next random-opponent word."""
    mask_row(s, scratch)
    n = 0
    for a in range(NUM_ACTIONS):
        if scratch[a]:
            n += 1
    pick = below(word(int(s[BASE]) & M32, int(s[BASE_HI]) & M32, W_MOVES + int(s[MOVES])), n)
    s[MOVES] += 1
    for a in range(NUM_ACTIONS):
        if scratch[a]:
            if pick == 0:
                return a
            pick -= 1
    return -1  # pragma: no cover - a deciding player always has a legal action


@njit(cache=True)
def keep_value(n, k, persian):  # noqa: ANN001, ANN201
    """``opponents.keep_value`` of one kind: worth of its least useful copy (lowest dropped first)."""
    if n == 0:
        return _INF
    if k == DISCARD_KIND:
        return 1000.0
    if k >= NUM_FORCE_KINDS:
        return 500.0 if n == 1 else 5.0
    if persian and k == ATTACK_KIND:
        return 900.0 if n == 1 else 15.0
    return 10.0 * (k + 1)


@njit(cache=True)
def heuristic_discard(s, p, may_play):  # noqa: ANN001, ANN201
    """``opponents._discard_phase``: play the discard card on a non-empty hand, else cut the least
    valued kind while over the limit, else done."""
    c = HCNT + p * NUM_KINDS
    if may_play and s[c + DISCARD_KIND] > 0 and s[HLEN + 1 - p] > 0:
        return PLAY_DISCARD_CARD
    if s[HLEN + p] > HAND_LIMIT:
        best = 0
        best_value = keep_value(s[c], 0, p == PERSIAN)
        for k in range(1, NUM_KINDS):
            v = keep_value(s[c + k], k, p == PERSIAN)
            if v < best_value:
                best_value = v
                best = k
        return DISCARD_BASE + best
    return DONE_DISCARDING


@njit(cache=True)
def next_add(s, plan, play):  # noqa: ANN001, ANN201
    """``opponents._next_add``: add the first kind still short of ``plan``, then commit."""
    if not play:
        return DECLINE
    for k in range(NUM_ADD_KINDS):
        if s[BUILD + k] < plan[k]:
            return ADD_BASE + k
    return COMMIT


@njit(cache=True)
def plan_attack(s, plan):  # noqa: ANN001, ANN201
    """``HeuristicPersian.plan_attack`` (threshold 300, endgame deck 1) into ``plan``; False to decline."""
    c = HCNT + PERSIAN * NUM_KINDS
    if s[c + ATTACK_KIND] == 0:
        return False
    deck = DECK_SIZE - s[POS + PERSIAN]
    endgame = deck <= 1
    attacks = s[c + ATTACK_KIND] if endgame else 1
    plan[0] = attacks
    force = 10 * attacks
    for k in range(1, NUM_FORCE_KINDS):
        plan[k] = s[c + k]
        force += 10 * (k + 1) * s[c + k]
    strategies = 0
    for k in range(NUM_FORCE_KINDS, NUM_ADD_KINDS):
        plan[k] = 1 if s[c + k] > 0 else 0
        strategies += plan[k]
    total = force * (strategies + 1)
    return total >= 300 or s[HLEN + GREEK] == 0 or endgame


@njit(cache=True)
def heuristic_persian(s, plan):  # noqa: ANN001, ANN201
    """``HeuristicPersian().act``: keeps Xerxes Commands for the turn of an attack."""
    if s[PHASE] == P_DISC:
        c = HCNT + PERSIAN * NUM_KINDS
        hold = s[c + DISCARD_KIND] > 0 and s[HLEN + PERSIAN] <= HAND_LIMIT and not plan_attack(s, plan)
        return heuristic_discard(s, PERSIAN, not hold)
    return next_add(s, plan, cached_plan(s, plan))


@njit(cache=True)
def plan_defence(s, plan):  # noqa: ANN001, ANN201
    """``HeuristicGreek.plan_defence`` (token value 25, strategy cost 80) into ``plan``; False for no
    defence. Same enumeration order and strict comparison as the Python code, so the same ties win."""
    c = HCNT + GREEK * NUM_KINDS
    attack = s[ATTACK]
    tokens = s[TOKENS]
    held = np.zeros(3, np.int64)
    n_held = 0
    for k in range(NUM_FORCE_KINDS, NUM_ADD_KINDS):
        if s[c + k] > 0:
            held[n_held] = k
            n_held += 1
    token_value = 25.0 * (1.0 + 2.0 / tokens)
    best_cost = np.inf
    best = np.zeros(6, np.int64)  # counts of kinds 0..4, number of strategy cards
    for c0 in range(s[c] + 1):
        for c1 in range(s[c + 1] + 1):
            for c2 in range(s[c + 2] + 1):
                for c3 in range(s[c + 3] + 1):
                    for c4 in range(s[c + 4] + 1):
                        force = 10 * c0 + 20 * c1 + 30 * c2 + 40 * c3 + 50 * c4
                        card_cost = float(force)
                        top = n_held + 1 if force else 1
                        for n_strat in range(top):
                            defence = force * (n_strat + 1)
                            lost = (attack - defence) // 10 if attack > defence else 0
                            cost = card_cost + n_strat * 80.0
                            if lost >= tokens:
                                cost += 1e9 - defence
                            else:
                                cost += lost * token_value
                            if cost < best_cost:
                                best_cost = cost
                                best[0] = c0
                                best[1] = c1
                                best[2] = c2
                                best[3] = c3
                                best[4] = c4
                                best[5] = n_strat
    for k in range(NUM_FORCE_KINDS):
        plan[k] = best[k]
    for k in range(NUM_FORCE_KINDS, NUM_ADD_KINDS):
        plan[k] = 0
    for i in range(best[5]):
        plan[held[i]] = 1
    return (best[0] + best[1] + best[2] + best[3] + best[4]) > 0


@njit(cache=True)
def heuristic_greek(s, plan):  # noqa: ANN001, ANN201
    """``HeuristicGreek().act``: plays Leonidas Strategy at once, defends at the least expected cost."""
    if s[PHASE] == G_DISC:
        return heuristic_discard(s, GREEK, True)
    return next_add(s, plan, cached_plan(s, plan))


@njit(cache=True)
def cached_plan(s, plan):  # noqa: ANN001, ANN201
    """The attack (defence) plan of the heuristic, computed once per build: while an attack or a defence
    is built, every input of the plan (the whole hand, cards being added included; the Greek hand size
    and the deck; the attack and the tokens) stays the same, so the plan does too."""
    key = 4 * s[TURN] + s[PHASE]
    if s[PLAN_KEY] == key:
        for k in range(NUM_ADD_KINDS):
            plan[k] = s[PLAN + k]
        return s[PLAN_PLAY] == 1
    play = plan_attack(s, plan) if s[PHASE] == ATTACK_PHASE else plan_defence(s, plan)
    s[PLAN_KEY] = key
    s[PLAN_PLAY] = 1 if play else 0
    for k in range(NUM_ADD_KINDS):
        s[PLAN + k] = plan[k]
    return play


@njit(cache=True)
def heuristic_action(s, plan):  # noqa: ANN001, ANN201
    """The built-in heuristic's move for the player to act."""
    if s[PLAYER] == PERSIAN:
        return heuristic_persian(s, plan)
    return heuristic_greek(s, plan)


# --- one game's step, and the loops over games ----------------------------------------------------------


@njit(cache=True)
def play_opponent(s, opp_mode, opp_side, ck, scratch, plan):  # noqa: ANN001, ANN201
    """The built-in opponent's moves until the agent must act or the game is over."""
    if opp_mode == OPP_NONE:
        return
    while s[PHASE] != OVER and s[PLAYER] == opp_side:
        a = heuristic_action(s, plan) if opp_mode == OPP_HEURISTIC else random_legal(s, scratch)
        apply(s, a, ck)


@njit(cache=True)
def step_game(s, what, a, opp_mode, opp_side, obs_side, ck, obs, mask, scratch, plan):  # noqa: ANN001, ANN201
    """One game's step. ``what``: ACT_MOVE applies the legal action ``a`` (legality is checked once, by
    the caller, against the mask row), ACT_RESTART deals a new game, ACT_NONE only lets the opponent move.
    Then the built-in opponent moves, and the observation of ``obs_side`` (-1: of the player to act) and
    the mask of the player to act are written."""
    if what == ACT_MOVE:
        apply(s, a, ck)
    elif what == ACT_RESTART:
        deal(s, ck)
    play_opponent(s, opp_mode, opp_side, ck, scratch, plan)
    observe(s, s[PLAYER] if obs_side < 0 else obs_side, obs)
    mask_row(s, mask)


@njit(cache=True)
def step_serial(states, games, what, actions, opp_mode, opp_side, obs_side, ck, obs, masks):  # noqa: ANN001, ANN201
    """[`step_game`][thermopylae_env.duel.kernel.step_game] for the listed games (``what`` and ``actions``
    indexed by game), in turn."""
    scratch = np.zeros(NUM_ACTIONS, np.bool_)
    plan = np.zeros(NUM_ADD_KINDS, np.int64)
    for j in range(games.shape[0]):
        i = games[j]
        step_game(states[i], what[i], actions[i], opp_mode, opp_side, obs_side, ck, obs[i], masks[i],
                  scratch, plan)


@njit(cache=True, parallel=True)
def step_parallel(states, games, what, actions, opp_mode, opp_side, obs_side, ck, obs, masks):  # noqa: ANN001, ANN201
    """[`step_serial`][thermopylae_env.duel.kernel.step_serial] spread over the cores in contiguous chunks of
    games (each game touches only its own rows; each chunk has its own scratch arrays, so nothing is allocated
    per game)."""
    n = games.shape[0]
    chunks = (n + CHUNK - 1) // CHUNK
    for c in prange(chunks):
        scratch = np.zeros(NUM_ACTIONS, np.bool_)
        plan = np.zeros(NUM_ADD_KINDS, np.int64)
        for j in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            i = games[j]
            step_game(states[i], what[i], actions[i], opp_mode, opp_side, obs_side, ck, obs[i], masks[i],
                      scratch, plan)


@njit(cache=True)
def observe_games(states, games, side, out):  # noqa: ANN001, ANN201
    """Observations of ``side`` (-1: of the player to act) of the listed games into ``out`` rows."""
    for j in range(games.shape[0]):
        s = states[games[j]]
        observe(s, s[PLAYER] if side < 0 else side, out[j])


@njit(cache=True)
def heuristic_games(states, games, out):  # noqa: ANN001, ANN201
    """The built-in heuristic's move for the player to act in each listed game; 0 for a game that is over
    (the one action its mask row allows: the step that restarts it ignores the action)."""
    plan = np.zeros(NUM_ADD_KINDS, np.int64)
    for j in range(games.shape[0]):
        s = states[games[j]]
        out[j] = 0 if s[PHASE] == OVER else heuristic_action(s, plan)

