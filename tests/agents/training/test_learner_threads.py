"""torch's thread count of a training run (training.runs.set_learner_threads, callbacks.ThreadCap):
measured, not assumed, and capped while the run goes by the cores other processes leave free."""

from __future__ import annotations

import pytest
import torch as th

pytest.importorskip("sb3_contrib")

from thermopylae_agents.training import callbacks, runs  # noqa: E402
from thermopylae_agents.training.callbacks import ThreadCap  # noqa: E402
from thermopylae_agents.training.config import Config  # noqa: E402


class _Model:
    batch_size = 4096
    precision = "float32"
    policy = None


@pytest.fixture(autouse=True)
def keep_torch_threads():
    before = th.get_num_threads()
    yield
    th.set_num_threads(before)


def test_a_fixed_count_is_used_as_it_is(monkeypatch) -> None:
    monkeypatch.setattr(runs, "measure_threads", lambda *a, **k: pytest.fail("a fixed count is not measured"))
    chosen = runs.set_learner_threads(_Model(), Config({"threads": 2}))
    assert chosen == {"threads": 2, "chosen_by": "config"} and th.get_num_threads() == 2


@pytest.mark.parametrize(
    ("rates", "expected"),
    [({1: 100.0, 2: 180.0}, 2), ({1: 100.0, 2: 105.0}, 1), ({1: 100.0, 2: 130.0, 3: 135.0}, 2)],
    ids=["two-clearly-faster", "two-barely-faster", "three-barely-faster-than-two"],
)
def test_auto_keeps_the_fastest_count_that_beats_fewer_by_ten_percent(monkeypatch, rates, expected) -> None:
    monkeypatch.setattr(runs, "free_threads", lambda: len(rates))
    monkeypatch.setattr(runs, "measure_threads", lambda _, candidates, *a: {c: rates[c] for c in candidates})
    chosen = runs.set_learner_threads(_Model(), Config({}))
    assert chosen["threads"] == expected and chosen["chosen_by"] == "measurement"
    assert th.get_num_threads() == expected
    assert set(chosen["samples_per_s"]) == {str(count) for count in rates}


def test_auto_on_one_free_core_measures_nothing(monkeypatch) -> None:
    monkeypatch.setattr(runs, "free_threads", lambda: 1)
    monkeypatch.setattr(runs, "measure_threads", lambda *a, **k: pytest.fail("nothing to choose from"))
    assert runs.set_learner_threads(_Model(), Config({"threads": "auto"}))["threads"] == 1


def test_the_cap_follows_the_free_cores_rollout_by_rollout_and_counts_them(monkeypatch) -> None:
    free = iter([2, 1, 1, 4])
    monkeypatch.setattr(callbacks, "free_threads", lambda: next(free))
    cap = ThreadCap(best=2)
    seen = []
    for _ in range(4):
        cap.on_rollout_start()
        seen.append(th.get_num_threads())
    assert seen == [2, 1, 1, 2]  # never above the measured best
    assert cap.counts == {2: 2, 1: 2}
    assert callbacks.ThreadCap is ThreadCap
