"""The shared input rules of thermopylae_env.actions: seeds, action batches, reset options."""

import numpy as np
import pytest

from thermopylae_env.actions import as_action_batch, as_action_index, as_seed, as_seed_list, check_options


@pytest.mark.parametrize("seed", [0, 7, np.int64(7), np.uint64(2**64 - 1), np.array(3), 2**64 - 1])
def test_integer_seeds_in_range_are_accepted_as_python_ints(seed):
    value = as_seed(seed)
    assert type(value) is int and value == int(seed)


def test_none_seed_means_fresh_entropy():
    assert as_seed(None) is None


@pytest.mark.parametrize("seed", [True, np.bool_(False), 1.5, 2.0, "3", b"abc", {1: 2}, [1],
                                  np.timedelta64(3)])
def test_non_integer_seeds_are_refused_with_a_type_error(seed):
    with pytest.raises(TypeError, match="seed"):
        as_seed(seed)


@pytest.mark.parametrize("seed", [-1, 2**64, 2**64 + 5, -(10**4000)])
def test_out_of_range_seeds_are_refused_so_no_two_seeds_share_a_game(seed):
    with pytest.raises(ValueError, match="2\\*\\*64"):
        as_seed(seed)


def test_per_game_seeds_are_checked_entry_by_entry():
    assert as_seed_list([1, None, np.int32(3)], 3) == [1, None, 3]
    with pytest.raises(ValueError, match="expected 3 seeds"):
        as_seed_list([1, 2], 3)
    with pytest.raises(TypeError, match="seed of game 1"):
        as_seed_list([1, 2.5, 3], 3)
    for bad in (b"abc", {"a": 1}, "123", 1.5):
        with pytest.raises(TypeError):
            as_seed_list(bad, 3)


def test_time_values_are_not_actions():
    with pytest.raises(TypeError):
        as_action_index(np.timedelta64(3), 72)
    with pytest.raises(TypeError):
        as_action_index(np.datetime64("2020-01-01"), 72)


def test_action_batches_refuse_booleans_and_masked_arrays():
    with pytest.raises(TypeError, match="boolean"):
        as_action_batch([True, 2], 2, 72)
    with pytest.raises(TypeError, match="masked"):
        as_action_batch(np.ma.masked_array([1, 2], mask=[0, 1]), 2, 72)
    with pytest.raises(ValueError, match="outside"):
        as_action_batch([1, 72], 2, 72)
    out = as_action_batch(np.array([3, 4], dtype=np.int8), 2, 72)
    assert out.dtype == np.intp and out.tolist() == [3, 4]


def test_reset_options_must_be_a_dict_of_known_keys():
    assert check_options(None, ("reset_mask",)) == {}
    assert check_options({"reset_mask": 1}, ("reset_mask",)) == {"reset_mask": 1}
    with pytest.raises(ValueError, match="unknown reset option 'colour'"):
        check_options({"colour": 1}, ("reset_mask",))
    with pytest.raises(TypeError, match="dict"):
        check_options([("reset_mask", 1)], ("reset_mask",))
