"""Masked PPO on the native vector engines, in one file, in the manner of CleanRL's ``cleanrl/ppo.py``.

    thermopylae ppo-native --total-timesteps 2000000 --seed 0
    thermopylae ppo-native --env-id thermopylae/DuelGreek-v0 --time-budget 120   # the duel, two minutes
    thermopylae ppo-native --track --capture-video             # Weights & Biases, videos (pip install wandb)
    tensorboard --logdir runs                                  # charts/, losses/, eval/

Read it top to bottom: the config (`Args`, a dataclass: each field is a command-line flag and its
docstring the flag's help, parsed with `tyro` by [`thermopylae_agents.cli.ppo_native`][], which also
checks the values), the actor-critic, the rollout on the native vector env, generalized advantage
estimation, the clipped PPO update, a greedy evaluation on fixed deals and the videos. No
Stable-Baselines3: torch, NumPy, Gymnasium and the env engine; the co-op fight odds are NumPy tables
(`thermopylae_agents.policies.fight_odds`).

Environments (``--env-id``): ``thermopylae/Coop-v0`` on ``thermopylae_env.coop.vector.CoopVectorEnv``,
``thermopylae/DuelGreek-v0`` and ``thermopylae/DuelPersian-v0`` on ``thermopylae_env.duel.vector``'s
engine with the other side played inside ``step`` by the built-in ``--opponent`` (heuristic or random).

Masking: the policy's logits of illegal actions are set to a large negative number before the softmax,
so the sampled action is always legal, and the ratio and entropy are those of the masked distribution.
The envs run with ``autoreset_mode=SAME_STEP``: the step that ends a game already returns the next game's
first observation and mask, so every mask row the sampler sees belongs to a live game. A row with no
legal action is still guarded (treated as all legal), so that a masked softmax never sees an empty
row, whatever the env's autoreset mode gives for a finished game waiting for its reset step.

The co-op network is the shipped co-op recipe's (``agents/thermopylae_agents/configs/coop.yaml``) without
the behaviour-cloning warm start: the observation plus the exact fight odds
([`FightFeatures`][thermopylae_agents.training.fight_torch.FightFeatures], the computation the SB3 extractor
``CoopFightFeatures`` calls too), an actor MLP [128, 128] and a critic
MLP [64, 64] (tanh), 256 games x 64 steps per rollout, 2 epochs of 4 minibatches. So its steps per second
compare with SB3's MaskablePPO on the same recipe (``benchmarks/ppo_speed.py``). The duel's network sees
the observation alone.

The flags that every CleanRL script has keep CleanRL's names and mean what they mean there: ``--exp-name``
(default: this file's name), ``--seed`` (default 0, the default of every ``thermopylae`` command, where
CleanRL's is 1), ``--torch-deterministic`` (``torch.backends.cudnn.deterministic``), ``--cuda`` (CUDA
when it is available), ``--track`` (Weights & Biases: ``--wandb-project-name``, ``--wandb-entity``; the
TensorBoard scalars are synced to it) and ``--capture-video``, as do CleanRL's PPO flags (``--env-id``,
``--total-timesteps``, ``--num-envs``, ``--learning-rate``, ...). The others are named as in every
``thermopylae`` command: ``--players``, ``--run-dir``, ``--eval-games``.

The run folder is ``runs/{run_name}`` as in CleanRL, ``run_name`` being
``{env}__{exp_name}__{seed}__{unix time}`` (``env`` the id without its ``thermopylae/``), or
``--run-dir``. It holds ``summary.json`` (config, device, steps/s end to end and of collection alone, the
greedy win rate on ``--eval-games`` fixed deals), ``agent.pt`` (the weights; a torch file is a pickle, so
``torch.load(..., weights_only=True)`` it), the TensorBoard events (always written) and with
``--capture-video`` the evaluation videos in ``videos/`` (Gymnasium's ``RecordVideo`` on the single env's
``rgb_array`` render; needs moviepy and pillow, the video extra).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch  # torch and tensorboard: the train extra (the console script names it when missing)
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter

from thermopylae_agents.training.fight_torch import FightFeatures
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID
from thermopylae_env.coop.vector import CoopVectorEnv
from thermopylae_env.duel.vector import DuelGreekVectorEnv, DuelPersianVectorEnv
from thermopylae_env.threads import configure_torch

__all__ = ["ENV_IDS", "Agent", "Args", "default_run_dir", "evaluate", "guard", "run_name", "train"]

VECTOR_ENVS = {
    COOP_ID: CoopVectorEnv,
    GREEK_ID: DuelGreekVectorEnv,
    PERSIAN_ID: DuelPersianVectorEnv,
}
ENV_IDS = tuple(VECTOR_ENVS)
EVAL_SEED = 10_000_000  # evaluation and video deals: EVAL_SEED + i, apart from the training seeds


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """the name of this experiment (part of the run's name)"""
    seed: int = 0
    """seed of the games, of torch and of the minibatch shuffles (CleanRL's default is 1, thermopylae's 0)"""
    torch_deterministic: bool = True
    """set torch.backends.cudnn.deterministic (--no-torch-deterministic lets cuDNN pick faster kernels)"""
    cuda: bool = True
    """train on CUDA when it is available (--no-cuda: on the CPU)"""
    track: bool = False
    """track the run with Weights & Biases (pip install wandb); the TensorBoard scalars are synced to it"""
    wandb_project_name: str = "thermopylae"
    """the Weights & Biases project of --track"""
    wandb_entity: str | None = None
    """the entity (team) of the Weights & Biases project (None: your own)"""
    capture_video: bool = False
    """record --video-episodes greedy evaluation games into RUN_DIR/videos (needs moviepy and pillow)"""
    video_episodes: int = 3
    """games recorded by --capture-video"""

    # Algorithm-specific arguments
    env_id: Literal["thermopylae/Coop-v0", "thermopylae/DuelGreek-v0", "thermopylae/DuelPersian-v0"] = COOP_ID
    """the game: the co-op game, or one side of the duel against --opponent"""
    total_timesteps: int = 2_000_000
    """env steps (decisions) to train for"""
    time_budget: float = 0.0
    """if > 0, stop training after this many seconds (checked after each update)"""
    num_envs: int = 256
    """games played at once"""
    num_steps: int = 64
    """steps per game per rollout (a rollout is num_envs * num_steps decisions)"""
    learning_rate: float = 3e-4
    """the learning rate of the Adam optimizer"""
    anneal_lr: bool = False
    """linearly anneal the learning rate to 0 over total_timesteps"""
    gamma: float = 1.0
    """discount: episodes are short and only the outcome counts"""
    gae_lambda: float = 0.95
    """the lambda of generalized advantage estimation"""
    num_minibatches: int = 4
    """minibatches per epoch (must divide num_envs * num_steps)"""
    update_epochs: int = 2
    """epochs over each rollout"""
    norm_adv: bool = True
    """normalize the advantages of each minibatch"""
    clip_coef: float = 0.2
    """the surrogate clipping coefficient"""
    clip_vloss: bool = False
    """clip the value loss as the policy loss is clipped"""
    ent_coef: float = 0.003
    """coefficient of the entropy bonus"""
    vf_coef: float = 0.5
    """coefficient of the value loss"""
    max_grad_norm: float = 0.5
    """the maximum norm of the gradient (clipped above it)"""
    target_kl: float = 0.0
    """if > 0, stop an update's epochs early once the approximate KL exceeds it"""

    # The games
    fight_features: bool = True
    """co-op: feed the network the observation plus the exact fight odds (else the observation alone)"""
    players: int = 1
    """co-op: the team size, 1..4"""
    reward_shaping: float = 0.0
    """co-op: the env's reward_shaping"""
    backend: Literal["auto", "numba"] = "auto"
    """co-op: the engine backend (CoopVectorEnv's backend argument)"""
    opponent: Literal["heuristic", "random"] = "heuristic"
    """duel: the built-in player of the other side"""

    # The machine and the outputs
    torch_threads: int = 1
    """torch's intra-op threads"""
    eval_games: int = 2000
    """greedy evaluation games at the end (0: none), deals 10_000_000 + i"""
    run_dir: str = ""
    """where to write summary.json, agent.pt, TensorBoard events and videos ('': runs/RUN_NAME, CleanRL's)"""


def run_name(args: Args) -> str:
    """CleanRL's name of a run, ``{env}__{exp_name}__{seed}__{unix time}``; ``env`` without its namespace,
    so that the run folder is one folder under ``runs/``."""
    return f"{args.env_id.split('/')[-1]}__{args.exp_name}__{args.seed}__{int(time.time())}"


def default_run_dir(args: Args) -> Path:
    """``--run-dir``, else ``runs/{run_name}`` (named at the call: the command line names it once)."""
    return Path(args.run_dir) if args.run_dir else Path("runs") / run_name(args)


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, envs: gym.vector.VectorEnv, fight_features: bool) -> None:
        super().__init__()
        size = int(np.prod(envs.single_observation_space.shape))
        if fight_features:
            self.features: nn.Module = FightFeatures(size)
            size = self.features.features_dim
        else:
            self.features = nn.Identity()
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

    def masked_logits(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.actor(self.features(x)).masked_fill(~mask, -1e8)  # illegal actions: probability 0

    def get_action_and_value(
        self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        hidden = self.features(x)
        logits = self.actor(hidden).masked_fill(~mask, -1e8)
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


def game_kwargs(args: Args) -> dict[str, Any]:
    """The env arguments of ``args``'s game (the co-op options or the duel's opponent)."""
    if args.env_id == COOP_ID:
        return {"num_players": args.players, "reward_shaping": args.reward_shaping}
    return {"opponent": args.opponent}


def make_env(args: Args, num_envs: int) -> gym.vector.VectorEnv:
    kwargs = game_kwargs(args) | ({"backend": args.backend} if args.env_id == COOP_ID else {})
    return VECTOR_ENVS[args.env_id](num_envs=num_envs, autoreset_mode="SameStep", **kwargs)


@torch.no_grad()
def evaluate(agent: Agent, args: Args, device: torch.device) -> float:
    """Greedy play (most likely legal action) of one game on each of ``eval_games`` fixed deals."""
    envs = make_env(args, args.eval_games)
    obs, _ = envs.reset(seed=EVAL_SEED)
    finished = np.zeros(args.eval_games, bool)  # the first game of each deal is the one counted
    won = np.zeros(args.eval_games, bool)
    while not finished.all():
        mask = torch.as_tensor(guard(envs.action_masks()), device=device)
        logits = agent.masked_logits(torch.as_tensor(obs, device=device), mask)
        obs, _, terminated, _, infos = envs.step(logits.argmax(1).cpu().numpy())
        first = terminated & ~finished
        won[first] = game_won(infos, terminated)[first]
        finished |= terminated
    envs.close()
    return float(won.mean())


def video_missing() -> str | None:
    """Why ``--capture-video`` cannot record here (a missing package), or ``None``."""
    missing = [name for name, module in (("moviepy", "moviepy"), ("pillow", "PIL"))
               if importlib.util.find_spec(module) is None]
    if missing:
        return (f"--capture-video: {' and '.join(missing)} not installed, no video recorded "
                "(pip install 'thermopylae-env[video]')")
    return None


@torch.no_grad()
def record_videos(agent: Agent, args: Args, device: torch.device, folder: Path) -> list[str]:
    """Greedy games on deals ``EVAL_SEED + i`` of the single env, recorded by Gymnasium's ``RecordVideo``
    from its ``rgb_array`` render; returns the video files."""
    env = gym.make(args.env_id, render_mode="rgb_array", **game_kwargs(args))
    env = gym.wrappers.RecordVideo(env, os.fspath(folder), episode_trigger=lambda _: True,
                                   name_prefix="eval", disable_logger=True)
    for episode in range(args.video_episodes):
        obs, info = env.reset(seed=EVAL_SEED + episode)
        done = False
        while not done:
            mask = torch.as_tensor(guard(np.asarray(info["action_mask"], bool)[None]), device=device)
            logits = agent.masked_logits(torch.as_tensor(obs[None], device=device), mask)
            obs, _, terminated, truncated, info = env.step(int(logits.argmax(1)[0]))
            done = terminated or truncated
    env.close()
    return sorted(os.fspath(path) for path in folder.glob("*.mp4"))


def train(args: Args) -> dict:
    """Train with ``args`` (checked by [`thermopylae_agents.cli.ppo_native`][]); writes the run folder
    and returns the summary."""
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = max(1, args.total_timesteps // batch_size)
    run_dir = default_run_dir(args)
    run_dir.mkdir(parents=True, exist_ok=True)
    tracker = None
    if args.track:
        import wandb  # extra: none

        # monitor_gym (CleanRL's) is left out: wandb's gym hook patches the video recorder of Gymnasium
        # before 1.0; the videos are logged below instead.
        tracker = wandb.init(project=args.wandb_project_name, entity=args.wandb_entity, sync_tensorboard=True,
                             config=asdict(args), name=run_dir.name, save_code=True)
    writer = SummaryWriter(os.fspath(run_dir))
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(
        f"|{key}|{value}|" for key, value in asdict(args).items()))
    video_skip = video_missing() if args.capture_video else None
    if video_skip:
        print(video_skip, flush=True)

    random.seed(args.seed)
    rng = np.random.default_rng(args.seed)  # minibatch shuffles
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    configure_torch(args.torch_threads)
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

    envs = make_env(args, args.num_envs)
    agent = Agent(envs, args.fight_features and args.env_id == COOP_ID).to(device)
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

    # Warm-up outside the clock: the numba engines load their compiled kernels on the first reset and step.
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
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32, device=device)
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
                if args.norm_adv and len(mb_inds) > 1:  # the std of one number is NaN
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
    summary: dict[str, Any] = {
        "config": asdict(args),
        "device": str(device),
        "env_steps": global_step,
        "train_seconds": round(train_seconds, 3),
        "steps_per_s": global_step / train_seconds,
        "cpu_steps_per_s": global_step / train_cpu_seconds,
        "collection_steps_per_s": global_step / collect_time,
        "engine_backend": getattr(envs, "backend", None),  # the co-op engine names its backend
    }
    envs.close()
    if args.eval_games > 0:
        summary["eval_games"] = args.eval_games
        summary["eval_win_rate"] = evaluate(agent, args, device)
        writer.add_scalar("eval/win_rate", summary["eval_win_rate"], global_step)
        print(f"greedy win rate on {args.eval_games} fixed deals: {summary['eval_win_rate']:.4f}")
    if args.capture_video and not video_skip:
        summary["videos"] = record_videos(agent, args, device, run_dir / "videos")
        print(f"recorded {len(summary['videos'])} evaluation videos in {run_dir / 'videos'}")
        if tracker is not None:
            tracker.log({"videos": [wandb.Video(path, format="mp4") for path in summary["videos"]]})
    print(f"{global_step:,} env steps in {train_seconds:.1f} s: {summary['steps_per_s']:,.0f} steps/s end to "
          f"end (cpu {summary['cpu_steps_per_s']:,.0f}), {summary['collection_steps_per_s']:,.0f} collecting")
    torch.save(agent.state_dict(), run_dir / "agent.pt")
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    writer.close()
    if tracker is not None:
        tracker.finish()
    return summary
