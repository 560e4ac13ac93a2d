"""CoopSearchExpert with a policy network playing its rollouts: the compiled observations and masks are the
game's, the compiled lockstep rollouts return what the Python reference's return, whole games end, and a
policy of another game is refused before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from thermopylae_agents.players import _coop_search_kernel as kernel
from thermopylae_agents.players._coop_search_observe import observe_batch, slot_codes
from thermopylae_agents.players._coop_search_tables import compact_state, engine_tables, heuristic_tables
from thermopylae_agents.players.coop_heuristic import CoopHeuristic, heuristic_positions
from thermopylae_agents.players.coop_search import _MAX_FIGHTS, CoopSearchExpert, _DiceTable
from thermopylae_agents.policies.registry import AgentSpecError, make_agent
from thermopylae_agents.policies.safe_policy import load_safe_policy
from thermopylae_env.coop.layout import GIVE_BASE, NUM_ACTIONS, OBS_SIZE
from thermopylae_env.coop.rules import CoopGame
from thermopylae_env.coop.state import MAX_DICE

TEAM_SIZES = (1, 2, 3, 4)
POLICY = {1: "coop_maskable_ppo", 2: "coop_2p_maskable_ppo", 3: "coop_3p_maskable_ppo",
          4: "coop_4p_maskable_ppo"}


@pytest.fixture(scope="module")
def policies() -> dict[int, object]:
    return {n: load_safe_policy(name) for n, name in POLICY.items()}


def _observe(states: np.ndarray, rows: np.ndarray, game: CoopGame) -> tuple[np.ndarray, np.ndarray]:
    obs = np.full((len(rows), OBS_SIZE), np.nan, dtype=np.float32)
    mask = np.ones((len(rows), NUM_ACTIONS), dtype=bool)
    observe_batch(states, rows, slot_codes(game), obs, mask)
    return obs, mask


@pytest.mark.parametrize("num_players", TEAM_SIZES)
def test_compiled_observation_and_mask_are_the_games_on_every_state_of_real_games(num_players):
    """Heuristic games with half the moves random (every phase, the end included; offered draws mostly go
    to seat 0, so that its hand overflows), each state converted with compact_state; the batch is observed
    in a shuffled order of its rows."""
    game = CoopGame(num_players=num_players)
    heuristic = CoopHeuristic()
    rng = np.random.default_rng(40 + num_players)
    compact, expected_obs, expected_mask, phases = [], [], [], set()
    for _ in range(20):
        state = game.init(rng)
        while True:
            compact.append(compact_state(game, state))
            expected_obs.append(game.observe(state))
            expected_mask.append(game.legal_action_mask(state))
            if state.terminated:
                break
            phases.add(state.phase)
            action = heuristic.choose_state(game, state)
            if rng.random() < 0.5:
                action = int(rng.choice(np.flatnonzero(game.legal_action_mask(state))))
            if state.phase == 1 and rng.random() < 0.7:
                action = GIVE_BASE
            game.step(state, action, rng)
    assert phases == {0, 1, 2}
    rows = rng.permutation(len(compact))
    obs, mask = _observe(np.array(compact), rows, game)
    np.testing.assert_array_equal(obs, np.array(expected_obs)[rows])
    np.testing.assert_array_equal(mask, np.array(expected_mask)[rows])


@pytest.mark.parametrize("num_players", [1, 3])
def test_compiled_rollout_states_observe_as_the_reference_engine_along_whole_games(num_players):
    """The compiled rules as the lockstep rollouts run them (rollout_roots, step_rollouts, the unseen sums
    left invalid) observe and mask as CoopGame at every step of games played with the same dice."""
    game = CoopGame(num_players=num_players)
    heuristic = CoopHeuristic()
    et, ht = engine_tables(game), heuristic_tables(heuristic)
    rng = np.random.default_rng(7 + num_players)
    for _ in range(6):
        state = game.init(rng)
        dice = rng.integers(1, 7, size=(1, _MAX_FIGHTS, MAX_DICE))
        table = _DiceTable(dice[0].tolist(), rng)
        first = int(rng.choice(np.flatnonzero(game.legal_action_mask(state))))
        states = np.empty((1, kernel.S_SIZE), dtype=np.int32)
        identity = np.arange(0)[None]
        kernel.rollout_roots(compact_state(game, state), identity, identity, np.array([first]), dice, 0, et,
                             ht[1], states)
        game.step(state, first, table)
        while True:
            obs, mask = _observe(states, np.array([0]), game)
            np.testing.assert_array_equal(obs[0], game.observe(state))
            np.testing.assert_array_equal(mask[0], game.legal_action_mask(state))
            if state.terminated:
                assert states[0, kernel.S_WON] == state.won
                break
            action = heuristic.choose_state(game, state)
            if rng.random() < 0.5:
                action = int(rng.choice(np.flatnonzero(mask[0])))
            kernel.step_rollouts(states, np.array([0]), np.array([action]), 1, dice, 0, et, ht[1])
            game.step(state, action, table)


def _searches(num_players: int, policy, seed: int) -> tuple[CoopSearchExpert, CoopSearchExpert]:
    return tuple(CoopSearchExpert(n_determinizations=5, rollouts=3, max_candidates=3, num_players=num_players,
                                  seed=seed, engine=engine, rollout_policy=policy)
                 for engine in ("compiled", "python"))


def _same_returns(num_players: int, policy, seed: int, count: int) -> int:
    """Both engines' searches on ``count`` positions: the same estimates; returns the positions searched."""
    compiled, python = _searches(num_players, policy, seed)
    searched = 0
    for obs, mask in heuristic_positions(num_players, 60 + num_players, 0.3, count=count):
        a, b = compiled.evaluate(obs, mask), python.evaluate(obs, mask)
        assert a == b
        assert compiled.last_values == python.last_values
        searched += len(a.estimates) > 1
    return searched


@pytest.mark.parametrize("num_players", [1, 2])
def test_compiled_policy_rollouts_return_what_the_python_reference_returns(num_players, policies):
    assert _same_returns(num_players, policies[num_players], seed=11, count=16) >= 5


@pytest.mark.slow
@pytest.mark.parametrize("num_players", TEAM_SIZES)
def test_compiled_policy_rollouts_return_what_the_python_reference_returns_on_more_positions(
        num_players, policies):
    assert _same_returns(num_players, policies[num_players], seed=12, count=80) >= 30


def test_policy_rollouts_change_the_searchs_estimates_but_not_its_draws(policies):
    """The same samples and dice as the heuristic's rollouts (the generator is left in the same place),
    other rollout returns."""
    with_policy = CoopSearchExpert(n_determinizations=8, rollouts=2, seed=5, rollout_policy=policies[1])
    without = CoopSearchExpert(n_determinizations=8, rollouts=2, seed=5)
    differ = 0
    for obs, mask in heuristic_positions(1, 80, 0.3, count=12):
        with_policy.act(obs, mask)
        without.act(obs, mask)
        assert with_policy.rng.bit_generator.state == without.rng.bit_generator.state
        differ += with_policy.last_values != without.last_values
    assert differ > 0


def _play(num_players: int, policy, seed: int) -> int:
    game = CoopGame(num_players=num_players)
    search = CoopSearchExpert(n_determinizations=4, rollouts=2, max_candidates=3, num_players=num_players,
                              seed=seed, rollout_policy=policy)
    rng = np.random.default_rng(seed)
    state = game.init(rng)
    moves = 0
    while not state.terminated:
        mask = game.legal_action_mask(state)
        action = search.act(game.observe(state), mask)
        assert mask[action]
        game.step(state, action, rng)
        moves += 1
    return moves


@pytest.mark.parametrize("num_players", TEAM_SIZES)
def test_the_search_with_policy_rollouts_plays_whole_games(num_players, policies):
    for seed in range(3):
        assert _play(num_players, policies[num_players], seed) > 0


class _Net:
    """A stand-in network of given sizes (the checks read only these attributes)."""

    def __init__(self, observation_size: int, num_actions: int, **attributes) -> None:
        self.name = "net"
        self.observation_size = observation_size
        self.num_actions = num_actions
        self.__dict__.update(attributes)

    def logits(self, obs: np.ndarray) -> np.ndarray:
        raise AssertionError("a refused policy is never called")


@pytest.mark.parametrize(("policy", "num_players", "message"), [
    (_Net(OBS_SIZE + 1, NUM_ACTIONS), 1, "observations of 116 values and 72 actions"),
    (_Net(OBS_SIZE, NUM_ACTIONS - 1), 2, "observations of 115 values and 71 actions"),
    (_Net(OBS_SIZE, NUM_ACTIONS, env_options={"num_players": 2}), 1, "trained for a team of 2"),
    (_Net(OBS_SIZE, NUM_ACTIONS, env_options={}), 3, "trained for a team of 1"),
    (_Net(OBS_SIZE, NUM_ACTIONS, env_id="thermopylae/DuelGreek-v0"), 1, "plays thermopylae/DuelGreek-v0"),
    (object(), 1, "must have logits"),
])
def test_a_policy_that_does_not_fit_the_game_is_refused_in_one_line(policy, num_players, message):
    with pytest.raises(ValueError, match=message) as error:
        CoopSearchExpert(num_players=num_players, rollout_policy=policy)
    assert "\n" not in str(error.value)


def test_shipped_policies_of_another_game_or_team_are_refused(policies):
    with pytest.raises(ValueError, match="observations of .* values and .* actions"):
        CoopSearchExpert(rollout_policy=load_safe_policy("duel_greek_maskable_ppo"))
    with pytest.raises(ValueError, match="trained for a team of 1, the search plays a team of 2"):
        CoopSearchExpert(num_players=2, rollout_policy=policies[1])


def test_the_search_spec_takes_a_rollout_policy():
    agent, label = make_agent("search:4,2,rollout=coop_2p_maskable_ppo", "coop", seed=1,
                              env_kwargs={"num_players": 2})
    assert (agent.n_determinizations, agent.rollouts) == (4, 2)
    assert label == "search:4,2,rollout=coop_2p_maskable_ppo"
    assert agent.rollout_policy.name == "coop_2p_maskable_ppo"
    assert make_agent("search:4,2", "coop")[0].rollout_policy is None


@pytest.mark.parametrize(("spec", "players", "message"), [
    ("search:rollout=nonsense", 1, "search option rollout must be a shipped policy"),
    ("search:rollout=model.zip", 1, "search option rollout must be a shipped policy"),
    ("search:rollout=missing/policy.json", 1, "missing/policy.json"),
    ("search:rollout=coop_maskable_ppo", 2, "trained for a team of 1, the search plays a team of 2"),
    ("search:rollout=duel_greek_maskable_ppo", 1, "plays thermopylae/DuelGreek-v0, not thermopylae/Coop-v0"),
])
def test_a_bad_rollout_option_is_one_agent_spec_error(spec, players, message):
    with pytest.raises(AgentSpecError, match=message) as error:
        make_agent(spec, "coop", env_kwargs={"num_players": players})
    assert "\n" not in str(error.value)
