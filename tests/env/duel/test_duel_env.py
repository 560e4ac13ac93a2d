"""The single-agent duel environments ``thermopylae/DuelGreek-v0`` and ``thermopylae/DuelPersian-v0``."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import thermopylae_env  # noqa: F401  (registers the ids)
from thermopylae_env.actions import IllegalActionError
from thermopylae_env.duel.env import DuelGreekEnv, DuelPersianEnv
from thermopylae_env.duel.layout import (
    ADD_BASE,
    COMMIT,
    DECK_SIZE,
    DECLINE,
    DISCARD_BASE,
    DONE_DISCARDING,
    GREEK,
    MAX_TURNS,
    NUM_ACTIONS,
    OBS_IS_PERSIAN,
    OBS_SIZE,
    PERSIAN,
    START_HAND,
    START_TOKENS,
)
from thermopylae_env.duel.opponents import HeuristicGreek, HeuristicPersian, RandomAgent
from thermopylae_env.duel.rules import check_invariants

ENVS = [DuelGreekEnv, DuelPersianEnv]


def random_episode(env: gym.Env, seed: int, rng: np.random.Generator) -> tuple[list, float, dict]:
    obs, info = env.reset(seed=seed)
    trace = [obs]
    while True:
        legal = np.flatnonzero(info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(int(legal[rng.integers(legal.size)]))
        trace.append(obs)
        assert not truncated
        if terminated:
            return trace, reward, info
        assert reward == 0.0


@pytest.mark.parametrize("env_id", ["thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0"])
def test_gymnasium_make_both_ids(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs) and env.action_space.n == NUM_ACTIONS
    side = PERSIAN if "Persian" in env_id else GREEK
    assert obs[OBS_IS_PERSIAN] == side
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].any()
    env.step(int(np.flatnonzero(info["action_mask"])[0]))
    env.close()


@pytest.mark.parametrize("cls", ENVS)
def test_gymnasium_check_env(cls):
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(cls(), skip_render_check=False)
        check_env(cls(render_mode="ansi"))


@pytest.mark.parametrize("cls", ENVS)
def test_sb3_check_env(cls):
    from stable_baselines3.common.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(cls(), warn=True)


@pytest.mark.parametrize("cls", ENVS)
def test_masks_agree_and_the_agent_always_has_a_choice(cls):
    env = cls(opponent="random")
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=1)
    steps = 0
    while True:
        mask = info["action_mask"]
        assert mask.dtype == np.int8 and mask.shape == (NUM_ACTIONS,)
        assert np.array_equal(env.action_masks(), mask.astype(bool)) and env.action_masks().dtype == bool
        assert env.state.current_player == env.side and mask.any()
        assert obs.dtype == np.float32 and obs.shape == (OBS_SIZE,)
        legal = np.flatnonzero(mask)
        obs, reward, terminated, _, info = env.step(int(legal[rng.integers(legal.size)]))
        steps += 1
        check_invariants(env.state, env.game)
        if terminated:
            break
    assert not info["action_mask"].any() and not env.action_masks().any()
    assert steps > 5


@pytest.mark.parametrize("cls", ENVS)
def test_rewards_and_is_success(cls):
    rng = np.random.default_rng(3)
    env = cls(opponent="random")
    outcomes = set()
    for seed in range(30):
        _, reward, info = random_episode(env, seed, rng)
        assert reward in (1.0, -1.0)
        assert info["is_success"] == (reward == 1.0) == (env.state.winner == env.side)
        outcomes.add(reward)
    assert outcomes == {1.0, -1.0}


@pytest.mark.parametrize("cls", ENVS)
def test_seeded_replay(cls):
    for opponent in ("random", "heuristic"):
        env_a, env_b = cls(opponent=opponent), cls(opponent=opponent)
        trace_a, _, _ = random_episode(env_a, 42, np.random.default_rng(9))
        trace_b, _, _ = random_episode(env_b, 42, np.random.default_rng(9))
        assert len(trace_a) == len(trace_b)
        assert all(np.array_equal(a, b) for a, b in zip(trace_a, trace_b, strict=True))
    trace_c, _, _ = random_episode(cls(opponent="random"), 43, np.random.default_rng(9))
    same = len(trace_c) == len(trace_a) and all(
        np.array_equal(a, c) for a, c in zip(trace_a, trace_c, strict=True)
    )
    assert not same


@pytest.mark.parametrize("cls", ENVS)
def test_illegal_action_ends_as_a_loss_by_default(cls):
    env = cls()
    _, info = env.reset(seed=0)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    obs, reward, terminated, truncated, info = env.step(illegal)
    assert terminated and not truncated and reward == -1.0
    assert info["illegal_action"] and info["illegal_reason"] and info["is_success"] is False
    with pytest.raises(RuntimeError):
        env.step(DONE_DISCARDING)
    env = cls(illegal_action_penalty=-5.0)
    _, info = env.reset(seed=0)
    assert env.step(illegal)[1] == -5.0


@pytest.mark.parametrize("cls", ENVS)
def test_illegal_action_raise_mode_changes_nothing(cls):
    env = cls(illegal_action="raise")
    obs, info = env.reset(seed=0)
    before = env.state.copy()
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError):
        env.step(illegal)
    assert env.state.hands == before.hands and env.state.phase == before.phase
    legal = int(np.flatnonzero(info["action_mask"])[0])
    env.step(legal)  # the episode goes on
    with pytest.raises(ValueError):
        cls(illegal_action="ignore")


@pytest.mark.parametrize("cls", ENVS)
def test_out_of_space_actions_raise_and_change_nothing(cls):
    env = cls()
    with pytest.raises(RuntimeError):
        env.step(0)  # before reset
    env.reset(seed=0)
    before = env.state.copy()
    for bad, err in ((NUM_ACTIONS, ValueError), (-1, ValueError), (np.array([1, 2]), ValueError),
                     (2.5, TypeError), (None, TypeError), ("done", TypeError)):
        with pytest.raises(err):
            env.step(bad)
    assert env.state.hands == before.hands and env.state.deck_pos == before.deck_pos
    assert env.state.actions_taken == before.actions_taken


def test_render_ansi_and_action_names():
    env = DuelPersianEnv(render_mode="ansi")
    assert "not started" in env.render()
    env.reset(seed=0)
    text = env.render()
    assert "you: persian" in text and "Turn 1" in text and "Greek tokens 10" in text
    assert env.decode_action(15) == "add Immortals (50) to attack"
    assert DuelGreekEnv().decode_action(15) == "add Phalanx (50) to defence"
    assert env.encode_action("commit attack") == COMMIT
    with pytest.raises(ValueError):
        DuelGreekEnv(render_mode="human")


def test_record_events():
    env = DuelGreekEnv(record_events=True)
    _, info = env.reset(seed=0)
    assert info["events"][0]["type"] == "deal"
    assert any(e["type"] == "done_discarding" and e["player"] == PERSIAN for e in info["events"])
    _, _, _, _, info = env.step(DONE_DISCARDING)
    assert info["events"][0] == {"type": "done_discarding", "player": GREEK}


# --- opponents ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ENVS)
def test_callable_opponent_sees_only_its_own_side(cls):
    calls = []

    def opponent(observation, action_mask):
        env_state = env.state
        opp = 1 - env.side
        assert env_state.current_player == opp
        assert np.array_equal(observation, env.game.observe(env_state, opp))
        assert observation[OBS_IS_PERSIAN] == opp
        assert np.array_equal(action_mask, env.game.legal_action_mask(env_state, np.int8))
        calls.append(1)
        legal = np.flatnonzero(action_mask)
        return int(legal[-1])  # e.g. "done discarding", "decline"

    env = cls(opponent=opponent)
    random_episode(env, 0, np.random.default_rng(0))
    assert len(calls) > 10 and env.opponent_label == "opponent"


def test_opponent_objects_with_act_and_illegal_opponent_moves():
    env = DuelGreekEnv(opponent=HeuristicPersian(attack_threshold=100))
    random_episode(env, 0, np.random.default_rng(0))
    env = DuelGreekEnv(opponent=lambda obs, mask: COMMIT)  # never legal in the Persian's discard phase
    with pytest.raises(IllegalActionError, match="persian opponent"):
        env.reset(seed=0)
    with pytest.raises(ValueError, match="opponent must be"):
        DuelGreekEnv(opponent=42)


@pytest.mark.parametrize("cls", ENVS)
def test_random_opponent_draws_from_the_env_rng(cls):
    firsts = []
    for _ in range(2):
        env = cls(opponent="random")
        trace, _, _ = random_episode(env, 5, np.random.default_rng(1))
        firsts.append(trace)
    assert all(np.array_equal(a, b) for a, b in zip(*firsts, strict=True))
    assert cls(opponent="random").opponent_label == "random"


def test_model_paths_are_refused_with_a_pointer_to_the_agents_loader(tmp_path):
    missing = tmp_path / "nowhere.zip"
    with pytest.raises(ValueError, match=r"nowhere.zip.*loads no model file.*thermopylae_agents"):
        DuelGreekEnv(opponent=str(missing))
    with pytest.raises(ValueError, match="heuristc"):
        DuelGreekEnv(opponent="heuristc")  # a typo is not silently a path that works
    junk = tmp_path / "junk.zip"
    junk.write_text("not a model")
    with pytest.raises(ValueError, match="junk.zip"):
        DuelPersianEnv(opponent=junk)


def test_saved_models_loaded_by_the_caller_play_as_opponent_objects(tmp_path):
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

    from thermopylae_agents.policies.sb3_agent import SB3Agent

    maskable_path = tmp_path / "persian_maskable.zip"
    MaskablePPO("MlpPolicy", DuelPersianEnv(), n_steps=64, batch_size=32, seed=0, device="cpu").save(
        maskable_path)
    opponent = SB3Agent(maskable_path)
    env = DuelGreekEnv(opponent=opponent, illegal_action="raise")
    assert env.opponent_label.endswith("persian_maskable.zip") and opponent.maskable
    random_episode(env, 0, np.random.default_rng(0))  # every opponent move legal, or it would raise

    ppo_path = tmp_path / "greek_ppo.zip"
    PPO("MlpPolicy", DuelGreekEnv(), n_steps=64, batch_size=32, seed=0, device="cpu").save(ppo_path)
    opponent = SB3Agent(str(ppo_path))
    env = DuelPersianEnv(opponent=opponent, illegal_action="raise")
    assert not opponent.maskable  # loaded by the PPO fallback: best legal action
    random_episode(env, 0, np.random.default_rng(0))

    wrong = tmp_path / "cartpole.zip"
    PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, device="cpu").save(wrong)
    with pytest.raises(ValueError, match="cartpole.zip"):  # the agent's check_fits, asked by the env
        DuelGreekEnv(opponent=SB3Agent(wrong))


def test_heuristic_players_beat_random_on_both_sides():
    for cls, agent in ((DuelGreekEnv, HeuristicGreek()), (DuelPersianEnv, HeuristicPersian())):
        env = cls(opponent="random")
        wins = 0
        for seed in range(40):
            obs, info = env.reset(seed=seed)
            while True:
                obs, reward, terminated, _, info = env.step(agent.act(obs, info["action_mask"]))
                if terminated:
                    wins += reward > 0
                    break
        assert wins >= 34, (cls.__name__, wins)
    random_agent = RandomAgent(seed=0)
    env = DuelGreekEnv()  # a random Greek against the heuristic Persian
    wins = 0
    for seed in range(40):
        obs, info = env.reset(seed=seed)
        while True:
            obs, reward, terminated, _, info = env.step(random_agent.act(obs, info["action_mask"]))
            if terminated:
                wins += reward > 0
                break
    assert wins <= 6


# --- the layout module ------------------------------------------------------------------------------


def _doc_table(doc: str, header: str) -> list[list[str]]:
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == header)
    rows = []
    for line in lines[start + 2:]:
        if not line.strip().startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


@pytest.mark.parametrize("cls", ENVS)
def test_env_docstring_tables_match_the_layout_pieces(cls):
    from thermopylae_env.duel.layout import ACTION_PIECES, OBSERVATION_PIECES

    observation = _doc_table(cls.__doc__, "| slice | piece | content | scale |")
    assert [row[1] for row in observation] == [p.name for p in OBSERVATION_PIECES]
    for row, piece in zip(observation, OBSERVATION_PIECES, strict=True):
        start, end = (int(x) for x in row[0].split(":"))
        assert (start, end, float(row[3])) == (piece.offset, piece.stop, piece.scale), row
    actions = _doc_table(cls.__doc__, "| index | piece | action | legal |")
    assert [row[1] for row in actions] == [p.name for p in ACTION_PIECES]
    for row, piece in zip(actions, ACTION_PIECES, strict=True):
        first, _, last = row[0].partition("..")
        assert (int(first), int(last or first) + 1) == (piece.offset, piece.stop), row


def test_layout_pieces_tile_the_vectors_and_name_the_engine_constants():
    from thermopylae_env.duel.layout import ACTION_PIECES, OBS_PIECE, OBS_SCALE, OBSERVATION_PIECES

    for pieces, size in ((OBSERVATION_PIECES, OBS_SIZE), (ACTION_PIECES, NUM_ACTIONS)):
        assert pieces[0].offset == 0 and pieces[-1].stop == size
        assert all(a.stop == b.offset for a, b in zip(pieces, pieces[1:], strict=False))
    assert OBS_SCALE.shape == (OBS_SIZE,)
    assert OBS_PIECE["own_deck"].scale == DECK_SIZE - START_HAND
    assert OBS_PIECE["tokens"].scale == START_TOKENS and OBS_PIECE["turn"].scale == MAX_TURNS
    assert (DISCARD_BASE, ADD_BASE, COMMIT, DECLINE) == (1, 11, 19, 20)


def test_each_observation_piece_holds_its_quantity():
    from thermopylae_env.duel.layout import OBS_PIECE

    env = DuelGreekEnv(opponent="heuristic")
    rng = np.random.default_rng(4)
    obs, info = env.reset(seed=4)
    seen_defence = False
    for _ in range(5000):
        state, game = env.state, env.game

        def piece(name, obs=obs):
            p = OBS_PIECE[name]
            return np.rint(obs[p.slice] * p.scale).astype(int).tolist()

        assert piece("hand") == state.hand_counts[GREEK]
        assert piece("own_discards") == state.discard_counts[GREEK]
        assert piece("opp_discards") == state.discard_counts[PERSIAN]
        assert piece("opp_hand_size") == [len(state.hands[PERSIAN])]
        assert piece("own_deck") == [state.deck_size(GREEK)]
        assert piece("opp_deck") == [state.deck_size(PERSIAN)]
        assert piece("tokens") == [state.tokens] and piece("turn") == [state.turn]
        assert piece("table") == state.table_counts[:8] and piece("table_total") == [state.attack_total]
        assert piece("phase") == [int(i == state.phase) for i in range(4)]
        assert piece("to_act") == [1] and piece("is_persian") == [0]
        seen_defence |= bool(state.table)
        assert np.array_equal(obs, game.observe(state, GREEK))
        legal = np.flatnonzero(info["action_mask"])
        obs, _, terminated, _, info = env.step(int(legal[rng.integers(legal.size)]))
        if terminated:
            if seen_defence:
                break
            obs, info = env.reset()
    assert seen_defence


# --- failing opponents ---------------------------------------------------------------------------------


class _FlakyOpponent:
    """Plays its first legal action until ``fail`` is set, then does what ``fail`` says."""

    def __init__(self, fail=None):
        self.fail = fail
        self.calls = 0

    def act(self, observation, action_mask):
        self.calls += 1
        if self.fail == "raise":
            raise ZeroDivisionError("the opponent's own bug")
        if self.fail == "illegal":
            return int(np.flatnonzero(action_mask == 0)[0])
        if self.fail == "none":
            return None
        if self.fail is not None:
            return self.fail  # a non-integer
        return int(np.flatnonzero(action_mask)[0])


FAILURES = [("raise", ZeroDivisionError), ("illegal", IllegalActionError), (2.5, IllegalActionError),
            ("3", IllegalActionError), ("none", IllegalActionError), (True, IllegalActionError)]


@pytest.mark.parametrize(("fail", "error"), FAILURES, ids=lambda x: repr(x))
@pytest.mark.parametrize("cls", ENVS)
def test_an_opponent_failing_in_step_leaves_the_env_refusing_steps_until_reset(cls, fail, error):
    opponent = _FlakyOpponent()
    env = cls(opponent=opponent)
    obs, info = env.reset(seed=1)
    rng = np.random.default_rng(0)
    while True:  # play until the agent's move hands the turn to the opponent
        before = opponent.calls
        legal = np.flatnonzero(info["action_mask"])
        action = int(legal[rng.integers(legal.size)])
        probe = env.state.copy()
        env.game.step(probe, action, np.random.default_rng(0))
        if not probe.terminated and probe.current_player != env.side:
            break
        obs, _, terminated, _, info = env.step(action)
        assert not terminated and opponent.calls == before
    opponent.fail = fail
    with pytest.raises(error):
        env.step(action)
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"refused: the (greek|persian) opponent .* call reset\(\)"):
            env.step(int(legal[0]))
    assert not env.action_masks().any()
    opponent.fail = None
    again, info = env.reset(seed=1)
    twin = cls(opponent=_FlakyOpponent())
    expected, twin_info = twin.reset(seed=1)
    assert np.array_equal(again, expected) and np.array_equal(info["action_mask"], twin_info["action_mask"])


@pytest.mark.parametrize(("fail", "error"), FAILURES, ids=lambda x: repr(x))
def test_an_opponent_failing_in_reset_leaves_the_env_refusing_steps(fail, error):
    env = DuelGreekEnv(opponent=_FlakyOpponent(fail))  # the Persian acts first, inside reset
    with pytest.raises(error):
        env.reset(seed=0)
    with pytest.raises(RuntimeError, match="refused: the persian opponent"):
        env.step(DONE_DISCARDING)
    assert not env.action_masks().any()


class _NotAPlayer:
    act = 3


@pytest.mark.parametrize(("opponent", "message"), [
    (HeuristicPersian, "the class HeuristicPersian, not a player"),
    (RandomAgent, "the class RandomAgent"),
    (object(), "opponent must be 'heuristic'"),
    (_NotAPlayer(), "act is not callable"),
    (lambda: 0, "cannot be called as \\(observation, action_mask\\)"),
    (lambda obs: 0, "cannot be called as"),
    (b"heuristic", "loads no model file"),
])
def test_an_opponent_that_cannot_act_is_refused_when_the_env_is_made(opponent, message):
    with pytest.raises(ValueError, match=message):
        DuelGreekEnv(opponent=opponent)
    with pytest.raises(ValueError, match=message):
        gym.make("thermopylae/DuelPersian-v0", opponent=opponent)


def test_opponents_with_an_optional_rng_or_extra_defaults_are_accepted():
    env = DuelGreekEnv(opponent=RandomAgent(seed=3))  # act(observation, action_mask, rng=None)
    random_episode(env, 0, np.random.default_rng(0))
    env = DuelPersianEnv(opponent=lambda obs, mask, *rest: int(np.flatnonzero(mask)[-1]))
    random_episode(env, 0, np.random.default_rng(0))


# --- one rule for seeds, actions and options ----------------------------------------------------------


ALL_ENV_IDS = ["thermopylae/Coop-v0", "thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0"]


@pytest.mark.parametrize("env_id", ALL_ENV_IDS)
def test_numpy_integer_seeds_play_the_same_games_as_python_ints(env_id):
    env = gym.make(env_id)
    for seed in (np.int64(7), np.uint64(7), np.int32(7), np.array(7)):
        a, _ = env.reset(seed=seed)
        b, _ = env.reset(seed=7)
        assert np.array_equal(a, b)
    env.reset(seed=2**64 - 1)


@pytest.mark.parametrize("env_id", ALL_ENV_IDS)
@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"seed": -1}, ValueError, "seed must be in 0 .. 2\\*\\*64 - 1"),
    ({"seed": 2**64}, ValueError, "seed must be in"),
    ({"seed": 1.5}, TypeError, "seed must be None or a non-negative integer"),
    ({"seed": True}, TypeError, "seed must be"),
    ({"seed": "3"}, TypeError, "seed must be"),
    ({"options": {"deal": 1}}, ValueError, "unknown reset option 'deal'"),
    ({"options": [("a", 1)]}, TypeError, "options must be None or a dict"),
])
def test_a_refused_reset_changes_nothing(env_id, kwargs, error, message):
    env, twin = gym.make(env_id).unwrapped, gym.make(env_id).unwrapped
    obs, info = env.reset(seed=11)
    twin.reset(seed=11)
    with pytest.raises(error, match=message):
        env.reset(**kwargs)
    action = int(np.flatnonzero(info["action_mask"])[0])
    got, want = env.step(action), twin.step(action)
    assert np.array_equal(got[0], want[0]) and got[1:4] == want[1:4]
    env.reset(seed=3, options={})
    env.reset(seed=3, options=None)


@pytest.mark.parametrize("env_id", ALL_ENV_IDS)
@pytest.mark.parametrize(
    "action", [np.timedelta64(3), np.datetime64(3, "s"), True, 3.0, "3", None, np.array([3])], ids=repr)
def test_actions_outside_the_space_are_refused_and_change_nothing(env_id, action):
    env, twin = gym.make(env_id).unwrapped, gym.make(env_id).unwrapped
    obs, info = env.reset(seed=5)
    twin.reset(seed=5)
    with pytest.raises((TypeError, ValueError)):
        env.step(action)
    legal = np.int64(np.flatnonzero(info["action_mask"])[0])
    got, want = env.step(legal), twin.step(int(legal))
    assert np.array_equal(got[0], want[0]) and got[1:4] == want[1:4]
    assert np.array_equal(got[4]["action_mask"], want[4]["action_mask"])


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [("3", TypeError, "action must be an integer, got str"), (2.7, TypeError, "action must be an integer"),
     (True, TypeError, "got the boolean"), (None, TypeError, "action is None"),
     (NUM_ACTIONS, ValueError, "outside the action space")],
)
def test_duel_decode_action_takes_only_an_integer_action_of_the_space(action, error, message):
    from thermopylae_env.duel.layout import decode_action

    with pytest.raises(error, match=message) as caught:
        decode_action(action, GREEK)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", [None, 0, b"commit attack", ["commit attack"]])
def test_duel_encode_action_takes_only_a_string(name):
    from thermopylae_env.duel.layout import encode_action

    with pytest.raises(TypeError, match="action name must be a string") as caught:
        encode_action(name)
    assert "\n" not in str(caught.value)
    with pytest.raises(TypeError, match="action name must be a string"):
        DuelGreekEnv.encode_action(name)
