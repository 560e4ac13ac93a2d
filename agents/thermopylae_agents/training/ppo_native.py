"""Masked PPO on the native co-op vector engine, in one file, in the manner of CleanRL's ``ppo.py``.

    thermopylae ppo-native --total-timesteps 2000000 --seed 1
    thermopylae ppo-native --time-budget 120            # stop after two minutes of training
    thermopylae-ppo-native --time-budget 120                   # the same, installed (the train extra)
    tensorboard --logdir runs                                  # charts/, losses/

Read it top to bottom: the config (a dataclass, every field a command-line flag), the actor-critic, the
rollout on ``thermopylae_env.coop.vector.CoopVectorEnv``, generalized advantage estimation, the clipped
PPO update, and a greedy evaluation on fixed deals. No Stable-Baselines3: only torch, NumPy and the env.

Masking: the policy's logits of illegal actions are set to a large negative number before the softmax,
so the sampled action is always legal, and the ratio and entropy are those of the masked distribution.
The env runs with ``autoreset_mode=SAME_STEP``: the step that ends a game already returns the next game's
first observation and mask, so every mask row the sampler sees belongs to a live game. A row with no
legal action is still guarded (treated as all legal), so that a masked softmax never sees an empty
row, whatever the env's autoreset mode gives for a finished game waiting for its reset step.

The network is the shipped co-op recipe's (``agents/thermopylae_agents/configs/coop.yaml``) without the
behaviour-cloning warm start: the observation plus the exact fight odds
(``thermopylae_agents.training.CoopFightFeatures``), an actor MLP [128, 128] and a critic MLP [64, 64]
(tanh), 256 games x 64 steps per rollout, 2 epochs of 4 minibatches. So its steps per second compare
with SB3's ``learn`` on the same recipe (``benchmarks/benchmark.py --ppo-only``).

The run writes ``RUN_DIR/summary.json`` (config, steps/s end to end and of collection alone, the greedy
win rate on ``--eval-games`` fixed deals) and ``RUN_DIR/agent.pt`` (the weights; a torch file is a pickle,
so ``torch.load(..., weights_only=True)`` it).
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch  # torch and tensorboard: the train extra (the console script names it when missing)
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter

from thermopylae_env.coop.vector import CoopVectorEnv
from thermopylae_env.threads import configure_torch


@dataclass
class Args:
    seed: int = 1
    """seed of the games, of torch and of the evaluation deals' offset"""
    total_timesteps: int = 2_000_000
    """env steps (decisions) to train for"""
    time_budget: float = 0.0
    """if > 0, stop training after this many seconds (checked after each update)"""
    num_envs: int = 256
    """games played at once"""
    num_steps: int = 64
    """steps per game per rollout (rollout = num_envs * num_steps)"""
    learning_rate: float = 3e-4
    anneal_lr: bool = False
    """linearly anneal the learning rate to 0 over total_timesteps"""
    gamma: float = 1.0
    """discount: episodes are short and only the outcome counts"""
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 2
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = False
    ent_coef: float = 0.003
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float = 0.0
    """if > 0, stop an update's epochs early once the approximate KL exceeds it"""
    fight_features: bool = True
    """feed the network the observation plus the exact fight odds (else the observation alone)"""
    num_players: int = 1
    reward_shaping: float = 0.0
    backend: str = "auto"
    """engine backend (CoopVectorEnv's backend argument): auto or numba"""
    torch_threads: int = 1
    device: str = "cpu"
    eval_games: int = 2000
    """greedy evaluation games at the end (0: none), deals 10_000_000 + i"""
    run_dir: str = ""
    """where to write TensorBoard events, summary.json and agent.pt (default runs/ppo_native_s{seed})"""


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class ActorCritic(nn.Module):
    def __init__(self, envs: CoopVectorEnv, fight_features: bool) -> None:
        super().__init__()
        obs_space = envs.single_observation_space
        if fight_features:
            from thermopylae_agents.players.fight_features import CoopFightFeatures

            self.features: nn.Module = CoopFightFeatures(obs_space)
            size = self.features.features_dim
        else:
            self.features = nn.Identity()
            size = int(np.prod(obs_space.shape))
        n = int(envs.single_action_space.n)
        self.critic = nn.Sequential(
            layer_init(nn.Linear(size, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(size, 128)), nn.Tanh(),
            layer_init(nn.Linear(128, 128)), nn.Tanh(),
            layer_init(nn.Linear(128, n), std=0.01),
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.features(x))

    def get_action_and_value(
        self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        hidden = self.features(x)
        logits = self.actor(hidden).masked_fill(~mask, -1e8)  # illegal actions: probability 0
        logp = torch.log_softmax(logits, dim=-1)
        if action is None:
            # Gumbel-max: argmax(log p + Gumbel noise) is a sample of p, without torch.multinomial.
            noise = -torch.log(-torch.log(torch.rand_like(logp).clamp_(1e-20, 1.0)))
            action = (logp + noise).argmax(dim=-1)
        # Entropy of the masked distribution: illegal actions have p = 0 and add nothing.
        entropy = -(logp.exp() * logp).sum(-1)
        return action, logp.gather(1, action[:, None]).squeeze(1), entropy, self.critic(hidden)


def guard(mask: np.ndarray) -> np.ndarray:
    """Rows with no legal action become all legal: a masked softmax over nothing would be NaN (such a
    row can only belong to a game whose action the env ignores)."""
    empty = ~mask.any(axis=1)
    if empty.any():
        mask = mask.copy()
        mask[empty] = True
    return mask


def game_won(infos: dict, terminated: np.ndarray) -> np.ndarray:
    """Which games won on this step (SAME_STEP autoreset: the ending step's info is in final_info)."""
    final = infos.get("final_info", {})
    return terminated & np.asarray(final.get("is_success", np.zeros_like(terminated)), bool)


def make_env(args: Args, num_envs: int) -> CoopVectorEnv:
    return CoopVectorEnv(
        num_envs=num_envs,
        num_players=args.num_players,
        reward_shaping=args.reward_shaping,
        autoreset_mode="SameStep",
        backend=args.backend,
    )


@torch.no_grad()
def evaluate(agent: ActorCritic, args: Args, device: torch.device) -> float:
    """Greedy play (most likely legal action) of one game on each of ``eval_games`` fixed deals."""
    envs = make_env(args, args.eval_games)
    obs, _ = envs.reset(seed=10_000_000)
    finished = np.zeros(args.eval_games, bool)  # the first game of each deal is the one counted
    won = np.zeros(args.eval_games, bool)
    while not finished.all():
        mask = torch.as_tensor(guard(envs.action_masks()), device=device)
        logits = agent.actor(agent.features(torch.as_tensor(obs, device=device))).masked_fill(~mask, -1e8)
        obs, _, terminated, _, infos = envs.step(logits.argmax(1).cpu().numpy())
        first = terminated & ~finished
        won[first] = game_won(infos, terminated)[first]
        finished |= terminated
    envs.close()
    return float(won.mean())


def train(args: Args) -> dict:
    """Train with ``args``; writes the run folder and returns the summary."""
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = max(1, args.total_timesteps // batch_size)
    run_dir = Path(args.run_dir or f"runs/ppo_native_s{args.seed}")
    writer = SummaryWriter(os.fspath(run_dir))
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(
        f"|{key}|{value}|" for key, value in vars(args).items()))

    random.seed(args.seed)
    rng = np.random.default_rng(args.seed)  # minibatch shuffles
    torch.manual_seed(args.seed)
    configure_torch(args.torch_threads)
    device = torch.device(args.device)

    envs = make_env(args, args.num_envs)
    agent = ActorCritic(envs, args.fight_features).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # Rollout storage.
    obs = torch.zeros((args.num_steps, args.num_envs, *envs.single_observation_space.shape), device=device)
    masks = torch.zeros((args.num_steps, args.num_envs, envs.single_action_space.n), dtype=torch.bool,
                        device=device)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long, device=device)
    logprobs = torch.zeros((args.num_steps, args.num_envs), device=device)
    rewards = torch.zeros((args.num_steps, args.num_envs), device=device)
    dones = torch.zeros((args.num_steps, args.num_envs), device=device)
    values = torch.zeros((args.num_steps, args.num_envs), device=device)

    # Warm-up outside the clock: the numba engine loads its compiled kernels on the first reset and step.
    envs.reset(seed=args.seed)
    envs.step(guard(envs.action_masks()).argmax(1))
    global_step = 0
    start_time, start_cpu = time.time(), time.process_time()
    collect_time = 0.0
    wins = games = 0
    next_obs_np, _ = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs_np, device=device)
    next_mask = torch.as_tensor(guard(envs.action_masks()), device=device)
    next_done = torch.zeros(args.num_envs, device=device)

    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / num_iterations) * args.learning_rate

        collect_start = time.time()
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step] = next_obs
            masks[step] = next_mask
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            next_obs_np, reward, terminated, truncated, infos = envs.step(action.cpu().numpy())
            ended = terminated | truncated
            rewards[step] = torch.as_tensor(reward, device=device)
            next_obs = torch.as_tensor(next_obs_np, device=device)
            next_mask = torch.as_tensor(guard(envs.action_masks()), device=device)
            next_done = torch.as_tensor(ended, dtype=torch.float32, device=device)
            if ended.any():
                games += int(ended.sum())
                wins += int(game_won(infos, terminated).sum())
        collect_time += time.time() - collect_start

        # Generalized advantage estimation; a game that ended at step t does not bootstrap from t + 1.
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                advantages[t] = lastgaelam
            returns = advantages + values

        b_obs = obs.reshape((-1, *envs.single_observation_space.shape))
        b_masks = masks.reshape((-1, envs.single_action_space.n))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape(-1)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        # Clipped PPO update.
        b_inds = np.arange(batch_size)
        clipfracs = []
        for _epoch in range(args.update_epochs):
            rng.shuffle(b_inds)
            for start in range(0, batch_size, minibatch_size):
                mb_inds = b_inds[start:start + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb_inds], b_masks[mb_inds], b_actions[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()
                with torch.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds], -args.clip_coef, args.clip_coef)
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

            if args.target_kl > 0 and approx_kl > args.target_kl:
                break

        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y

        elapsed = time.time() - start_time
        sps = int(global_step / elapsed)
        writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
        writer.add_scalar("charts/win_rate", wins / max(games, 1), global_step)
        writer.add_scalar("charts/games", games, global_step)
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
        writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
        writer.add_scalar("losses/old_approx_kl", old_approx_kl.item(), global_step)
        writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
        writer.add_scalar("losses/clipfrac", np.mean(clipfracs), global_step)
        writer.add_scalar("losses/explained_variance", explained_var, global_step)
        writer.add_scalar("charts/SPS", sps, global_step)
        writer.add_scalar("charts/collection_SPS", int(global_step / collect_time), global_step)
        print(f"iteration {iteration}/{num_iterations}  step {global_step:,}  SPS {sps:,}  "
              f"training win rate {wins / max(games, 1):.3f} ({games:,} games)", flush=True)
        wins = games = 0
        if args.time_budget > 0 and elapsed >= args.time_budget:
            print(f"time budget of {args.time_budget:g} s reached", flush=True)
            break

    train_seconds = time.time() - start_time
    train_cpu_seconds = time.process_time() - start_cpu
    summary = {
        "config": vars(args),
        "env_steps": global_step,
        "train_seconds": round(train_seconds, 3),
        "steps_per_s": global_step / train_seconds,
        "cpu_steps_per_s": global_step / train_cpu_seconds,
        "collection_steps_per_s": global_step / collect_time,
        "engine_backend": envs.backend,
    }
    envs.close()
    if args.eval_games > 0:
        summary["eval_games"] = args.eval_games
        summary["eval_win_rate"] = evaluate(agent, args, device)
        writer.add_scalar("eval/win_rate", summary["eval_win_rate"], global_step)
        print(f"greedy win rate on {args.eval_games} fixed deals: {summary['eval_win_rate']:.4f}")
    print(f"{global_step:,} env steps in {train_seconds:.1f} s: {summary['steps_per_s']:,.0f} steps/s end to "
          f"end (cpu {summary['cpu_steps_per_s']:,.0f}), {summary['collection_steps_per_s']:,.0f} collecting")
    torch.save(agent.state_dict(), run_dir / "agent.pt")
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    writer.close()
    return summary
