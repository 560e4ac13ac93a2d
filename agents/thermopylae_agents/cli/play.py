"""``thermopylae play`` and ``thermopylae replay``: the games in a terminal, and game records replayed.

The terminal game is plain text (no curses), so it works with piped input: each prompt reads one line; a
number 1..k (ASCII digits) picks an action (its name works too), ``h`` or ``?`` prints the help, ``q``
quits, and the end of the input quits cleanly (exit code 0). A wrong entry is explained and asked again.
The screen is cleared between moves only when the output is a terminal. Ctrl-C stops the game (exit code
130) and, with ``--record``, closes the record as unfinished.

Everything printed passes through [`thermopylae_env.render.safe_text`][] (a record's text cannot move
the cursor, clear the screen or set the window title). ``replay`` never loads a model that a record
names: a duel played against a model replays with ``--opponent MODEL``. The parser is in
[`thermopylae_agents.cli.app`][].
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import stat
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import gymnasium as gym
import numpy as np

from thermopylae_agents.cli.args import short, shown
from thermopylae_agents.evaluation.labels import coop_action_label as _coop_label
from thermopylae_agents.evaluation.labels import duel_action_label as _duel_label
from thermopylae_agents.evaluation.labels import duel_cards_text as _group
from thermopylae_agents.evaluation.replay import opponent_agent, replay_opponent
from thermopylae_agents.policies.registry import (
    check_agent_game,
    make_agent,
    model_path,
    parse_spec,
    shipped_policies,
)
from thermopylae_agents.policies.sb3_agent import SB3Agent
from thermopylae_env.coop.env import marker_track, render_text
from thermopylae_env.coop.layout import GRAVEYARD_WIN, LOSS_MARKER, NUM_SUPPORT
from thermopylae_env.coop.state import Phase as CoopPhase
from thermopylae_env.duel.layout import PLAYER_NAMES, START_TOKENS
from thermopylae_env.duel.rules import combat_total
from thermopylae_env.duel.state import Phase as DuelPhase
from thermopylae_env.record_format import load_record
from thermopylae_env.records import (
    RecordEpisode,
    RecordMismatchError,
    RecordNeedsOpponentError,
    check_writable,
    describe_event,
    end_reason,
    iter_replay,
)
from thermopylae_env.render import safe_text

__all__ = ["Terminal", "UsageError", "play_coop", "play_duel", "replay"]

_CLEAR = "\033[2J\033[H"


class _Quit(Exception):
    """The player asked to stop (``q``) or the input ended."""


class Terminal:
    """Line-based input and output on two text streams (standard input and output by default)."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout
        self.interactive_in = _isatty(self.stdin)
        self.interactive_out = _isatty(self.stdout)

    def print(self, text: str = "") -> None:
        self.stdout.write(safe_text(text) + "\n")
        self.stdout.flush()

    def screen(self, text: str) -> None:
        """Show a whole screen: cleared first on a terminal, separated by a rule when piped."""
        if self.interactive_out:
            self.stdout.write(_CLEAR)
        else:
            self.stdout.write("\n" + "-" * 78 + "\n")
        self.print(text)

    def ask(self, prompt: str) -> str | None:
        """One line of input without its newline, or ``None`` at the end of the input."""
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:
            self.stdout.write("\n")
            return None
        line = line.rstrip("\r\n")
        if not self.interactive_in:
            # echo piped answers so the transcript reads naturally
            self.stdout.write(shown(line) + "\n")
        return line


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def choose(term: Terminal, options: Sequence[tuple[int, str]], help_text: str) -> int:
    """Ask until the player picks one of ``options`` (``(action, label)`` pairs); return its action.

    Raises ``_Quit`` on ``q`` or at the end of the input.
    """
    k = len(options)
    usage = (f"Type a number from 1 to {k} and press Enter (or the action's name); "
             "h or ? for help, q to quit.")
    while True:
        line = term.ask(f"Your choice (1-{k}, h = help, q = quit): ")
        if line is None:
            raise _Quit("end of input")
        entry = line.strip().lower()
        if entry in ("q", "quit", "exit"):
            raise _Quit("quit")
        if entry in ("h", "?", "help"):
            term.print(help_text)
            term.print(usage)
            continue
        if not entry:
            term.print(f"Nothing was entered. {usage}")
            continue
        if entry.isascii() and entry.isdigit():
            number = int(entry) if len(entry) <= 6 else 0  # a huge number is no choice either
            if 1 <= number <= k:
                return options[number - 1][0]
            term.print(f"{short(entry, 12)} is not a choice: the actions are numbered 1 to {k}. {usage}")
            continue
        for action, label in options:
            if entry == label.lower() or entry == label.lower().split("  ")[0].strip():
                return action
        term.print(f"{short(line.strip())!r} is not a choice (numbers are ASCII digits). {usage}")


def _numbered(options: Sequence[tuple[int, str]], marks: dict[int, str] | None = None) -> str:
    width = len(str(len(options)))
    lines = []
    for number, (action, label) in enumerate(options, start=1):
        mark = f"   {marks[action]}" if marks and action in marks else ""
        lines.append(f"  {number:>{width}}. {label}{mark}")
    return "\n".join(lines)


def _hints(hinter: Any, obs: np.ndarray, mask: np.ndarray, options: Sequence[tuple[int, str]],
           top: int = 3) -> tuple[dict[int, str], str]:
    """Marks (``"<- agent 62%"``) for the agent's ``top`` most probable legal actions, and a summary line
    naming their numbers in the list."""
    probs = np.asarray(hinter.action_probabilities(obs, np.asarray(mask, dtype=bool)), dtype=float)
    number = {action: k for k, (action, _) in enumerate(options, start=1)}
    ranked = sorted(number, key=lambda a: (-probs[a], number[a]))[:top]
    marks = {a: f"<- agent {100 * probs[a]:.0f}%" for a in ranked}
    summary = ", ".join(f"{number[a]} ({100 * probs[a]:.0f}%)" for a in ranked)
    return marks, f"Agent hints, most probable first: {summary}"


def _show_hints(term: Terminal, hinter: Any, obs: np.ndarray, mask: np.ndarray,
                options: Sequence[tuple[int, str]]) -> dict[int, str]:
    if hinter is None:
        return {}
    marks, summary = _hints(hinter, obs, mask, options)
    term.print(summary)
    return marks


def _seed(seed: int | None) -> int:
    return secrets.randbits(31) if seed is None else int(seed)


class UsageError(Exception):
    """A bad argument found after parsing (a path, a spec): one line on standard error, exit code 2."""


def _hint_agent(hints: str, env_id: str, env: Any, env_kwargs: dict[str, Any]) -> Any:
    """The hint player: a shipped policy by name or an exported ``.json`` / ``.safetensors`` / Hugging Face
    folder (pickle-free), else the SB3 model file the user named; a policy trained on another game
    (``env_kwargs``: its options) is refused."""
    if hints in shipped_policies() or parse_spec(hints).kind in ("shipped", "weights"):
        return make_agent(hints, env_id, env_kwargs=env_kwargs)[0]

    check_agent_game(hints, env_id, env_kwargs)
    return SB3Agent(model_path(hints), env=env)


def _check_record_target(path: str) -> None:
    """A ``--record`` target is a new path or a regular file: not empty, not a device (``/dev/full``),
    not a named pipe (opening one waits for a reader forever), not a folder."""
    if not path.strip():
        raise UsageError("--record '': cannot write the record: the file name is empty")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # a new path; whether it can be created is check_writable's question
    if not stat.S_ISREG(mode):
        raise UsageError(f"--record {path}: cannot write the record there: not a regular file (a folder, a "
                         "device or a pipe); give the path of a new or existing file")


def _make_play_env(env_id: str, hints: str | None, record: str | None, **options: Any) -> tuple[Any, Any]:
    """The env of a terminal game (events on, recorded when asked) and the hint agent (or ``None``).

    ``options["opponent"]`` (duel) is an agent spec: a built-in player by name, or a model loaded here
    (the user typed it). A bad opponent, hint model or record path raises
    [`UsageError`][thermopylae_agents.cli.play.UsageError]."""
    try:
        if record is not None:
            _check_record_target(record)
            check_writable(record)  # before anything is loaded or played
        recorded = dict(options)
        if "opponent" in options:
            options["opponent"], recorded["opponent"] = opponent_agent(options["opponent"], env_id)
        env = gym.make(env_id, record_events=True, disable_env_checker=True, **options)
        hinter = None
        if hints is not None:
            game_options = {key: options[key] for key in ("num_players",) if options.get(key) is not None}
            hinter = _hint_agent(hints, env_id, env, game_options)
        if record is not None:
            env = RecordEpisode(env, record, env_id=env_id, options=recorded, agent="human")
    except (ValueError, TypeError, OSError) as err:
        raise UsageError(str(err)) from None
    return env, hinter


# ------------------------------------------------------------------------------------------------ co-op

COOP_HELP = """\
How to play (co-op, the team against the Persian deck):
  On each turn the acting seat either RETREATS (the marker moves one step; reaching 7 loses; then the
  team may draw a Spartan card and choose who gets it) or FIGHTS with one card of its hand plus any
  number of support cards: total = card + one die per support card (+1 die when the marker is on 3 or 6).
  Slot 1 is fought first: total < white: it stays and the fight stops; total >= white: beaten (discard
  pile); total >= red: it goes to the graveyard. Slot 2 is fought only if slot 1 was beaten.
  Each beaten card with a bonus offers a draw. Win: 12 Persians in the graveyard, or the Persian deck
  cannot refill the line. Loss: the marker reaches 7, or no Spartan card is left in any hand or the deck."""


def _coop_screen(game: Any, state: Any, seed: int, events: Sequence[dict]) -> str:
    lines = [f"=== Thermopyles (co-op) | {game.num_players} player(s) | turn {state.turn} | seed {seed} ==="]
    legend = f"(* = +1 die, {LOSS_MARKER} = defeat)"
    lines.append(f"Marker track:   {marker_track(state.marker)}    {legend}")

    def slot(card: int) -> str:
        if card < 0:
            return "(empty)"
        p = game.persian[card]
        return f"white {p.white:>2} / red {p.red:>2}{'  BONUS' if p.bonus else ''}"

    lines.append(f"Persian line:   slot 1: {slot(state.slot1)}")
    lines.append(f"                slot 2: {slot(state.slot2)}")
    lines.append(f"Support left:   {state.support} of {NUM_SUPPORT}  " + "[S]" * state.support
                 + "[ ]" * (NUM_SUPPORT - state.support))
    lines.append(f"Decks:          Spartan {state.spartan_deck_size} | Persian {state.persian_deck_size} | "
                 f"Persian discard {len(state.persian_discard)} | graveyard {len(state.graveyard)}/"
                 f"{GRAVEYARD_WIN}")
    for seat, hand in enumerate(state.hands):
        values = " ".join(f"{v:>2}" for v in sorted(game.spartan[c] for c in hand)) or "(empty)"
        pointer = ">" if seat == state.current_player and not state.terminated else " "
        lines.append(f"Hand {pointer} seat {seat}:  {values}")
    if events:
        lines.append("")
        lines.append("What happened:")
        for event in events:
            text = describe_event(event)
            if text:
                lines.append(f"  - {text}")
    lines.append("")
    if state.terminated:
        lines.append("GAME OVER: " + ("you WIN!" if state.won else "you lose."))
    elif state.phase == CoopPhase.MAIN:
        lines.append(f"Seat {state.current_player} to act: retreat or fight.")
    elif state.phase == CoopPhase.DRAW_OFFER:
        lines.append("A Spartan card may be drawn: give it to a seat, or decline it.")
    else:
        lines.append(f"Seat {state.recipient} holds 6 cards: discard one.")
    return "\n".join(lines)


def play_coop(args: argparse.Namespace, term: Terminal) -> int:
    seed = _seed(args.seed)
    env, hinter = _make_play_env("thermopylae/Coop-v0", args.hints, args.record, num_players=args.players)
    game = env.unwrapped.game
    return _play_loop(
        env, term, hinter, args.record, COOP_HELP, seed, first_events=[],
        screen=lambda state, events: _coop_screen(game, state, seed, events),
        label=lambda state, action: _coop_label(game, state, action),
    )


def _play_loop(
    env: Any, term: Terminal, hinter: Any, record: str | None, help_text: str, seed: int,
    first_events: list[dict] | None, screen: Any, label: Any,
) -> int:
    """Show the position, offer the legal moves, apply the choice; until the game ends or the player quits.

    ``first_events=None`` shows the events of the reset (the duel's deal and first draw). Quitting, the
    end of the input and Ctrl-C close the record as unfinished (it still replays).
    """
    base = env.unwrapped
    try:
        obs, info = env.reset(seed=seed)
    except ValueError as err:  # the record file could not be opened
        env.close()
        raise UsageError(str(err)) from None
    except OSError as err:
        raise _record_failed(env, record, err) from None
    events = list(info.get("events", [])) if first_events is None else first_events
    try:
        while True:
            state = base.state
            term.screen(screen(state, events))
            if state.terminated:
                break
            options = [(int(a), label(state, int(a))) for a in np.flatnonzero(info["action_mask"])]
            marks = _show_hints(term, hinter, obs, info["action_mask"], options)
            term.print(_numbered(options, marks))
            action = choose(term, options, help_text)
            try:
                obs, _, _, _, info = env.step(action)
            except OSError as err:  # the record could not be written (a full disk)
                raise _record_failed(env, record, err) from None
            events = list(info.get("events", []))
    except _Quit as stop:
        term.print("End of input: quitting." if str(stop) == "end of input" else "Quit.")
        _close_record(env, term, record, finished=False)
        return 0
    except KeyboardInterrupt:
        term.print("\nInterrupted.")
        _close_record(env, term, record, finished=False)
        return 130
    _close_record(env, term, record, finished=True)
    return 0


def _record_failed(env: Any, path: str | None, err: OSError) -> Exception:
    """The error to raise when writing the record failed (the env is closed; nothing else is written)."""
    if path is None:
        return err
    with contextlib.suppress(OSError):  # the write error is the one to report
        env.close()
    return UsageError(f"--record {path}: cannot write the record: {err.strerror or err}")


def _close_record(env: Any, term: Terminal, path: str | None, finished: bool) -> None:
    try:
        env.close()
    except OSError as err:
        raise _record_failed(env, path, err) from None
    if path:
        term.print(f"Game record written to {path}" + ("" if finished else " (game not finished)")
                   + f"; replay it with: thermopylae replay {path}")


# ------------------------------------------------------------------------------------------------- duel

DUEL_HELP = """\
How to play (duel, Greek against Persian):
  Each turn both draw (the Persian first; when his deck is empty the Greeks win). Then the Persian and
  then the Greek have a discard phase: play discard cards (Xerxes Commands / Leonidas Strategy: the
  opponent discards 2 cards at random), discard unwanted cards, then 'done discarding' with at most 7.
  Then the Persian may attack: add at least one Attack card plus any troops and strategy cards of
  distinct types, one card at a time, and commit (or decline). The Greek sees the attack and may defend
  the same way (at least one troop card). Total = sum of forces x (strategy cards + 1). If the attack is
  larger, the Greeks lose (attack - defence) / 10 of their 10 tokens; no tokens left: the Persians win."""


def _duel_screen(game: Any, state: Any, side: int, opponent: str, seed: int, events: Sequence[dict]) -> str:
    me = PLAYER_NAMES[side].capitalize()
    them = PLAYER_NAMES[1 - side].capitalize()
    lines = [f"=== Thermopylae duel | you: {me} | opponent: {opponent} | turn {state.turn} | seed {seed} ==="]
    if not state.terminated:
        phase = {DuelPhase.PERSIAN_DISCARD: "Persian discard phase",
                 DuelPhase.GREEK_DISCARD: "Greek discard phase", DuelPhase.ATTACK: "Persian attack",
                 DuelPhase.DEFENCE: "Greek defence"}[DuelPhase(state.phase)]
        who = "your move" if state.current_player == side else f"{them}'s move"
        lines.append(f"Phase:          {phase} - {who}")
    lines.append(f"Greek tokens:   {state.tokens}/{START_TOKENS}  " + "#" * state.tokens
                 + "." * (START_TOKENS - state.tokens))
    opp = 1 - side
    lines.append(f"{them} (opponent): {len(state.hands[opp])} card(s) in hand | "
                 f"deck {state.deck_size(opp)} | discard pile {len(state.discards[opp])}")
    lines.append(f"  discard pile: {_group(game, state.discards[opp])}")
    if state.table:
        lines.append(f"Attack on the table (total {state.attack_total}): {_group(game, state.table)}")
    else:
        lines.append("Attack on the table: none")
    lines.append(f"Your hand ({len(state.hands[side])}): {_group(game, state.hands[side])}")
    if not state.terminated and state.current_player == side and any(state.build):
        kinds = game.kinds[side]
        parts = [f"{n} x {kinds[k].label}" if n > 1 else kinds[k].label
                 for k, n in enumerate(state.build) if n]
        what = "attack" if side == 1 else "defence"
        lines.append(f"Your {what} so far (total {combat_total(state.build)}): " + ", ".join(parts))
    lines.append(f"Your deck {state.deck_size(side)} | your discard pile {len(state.discards[side])}: "
                 f"{_group(game, state.discards[side])}")
    told = [text for text in (describe_event(e, viewer=side) for e in events) if text]
    if told:
        lines.append("")
        lines.append("What happened:")
        lines.extend(f"  - {text}" for text in told)
    lines.append("")
    if state.terminated:
        lines.append("GAME OVER: " + ("you WIN!" if state.winner == side else "you lose."))
    else:
        lines.append("Your move:")
    return "\n".join(lines)


def play_duel(args: argparse.Namespace, term: Terminal) -> int:
    side = 0 if args.side == "greek" else 1
    env_id = "thermopylae/DuelGreek-v0" if side == 0 else "thermopylae/DuelPersian-v0"
    seed = _seed(args.seed)
    env, hinter = _make_play_env(env_id, args.hints, args.record, opponent=args.opponent)
    base = env.unwrapped
    return _play_loop(
        env, term, hinter, args.record, DUEL_HELP, seed, first_events=None,
        screen=lambda state, events: _duel_screen(base.game, state, side, base.opponent_label, seed, events),
        label=lambda state, action: _duel_label(base.game, state, side, action),
    )


# ----------------------------------------------------------------------------------------------- replay


def _render_moment(moment: Any) -> str:
    base = moment.env.unwrapped
    if hasattr(base, "side"):
        return base.game.render(base.state)

    return render_text(base.game, base.state).rstrip("\n")


def replay(args: argparse.Namespace, term: Terminal) -> int:
    """Replay a record; everything shown is recomputed by the replay and checked against the record
    first (the record's ``agent`` claim cannot be checked, so it is not shown)."""
    try:
        record = load_record(args.file)
    except FileNotFoundError:
        raise UsageError(f"no such file: {args.file}") from None
    except ValueError as err:
        raise UsageError(f"not a valid game record: {err}") from None
    total = len(record.steps)
    # Without a terminal (a pipe, a CI job) nobody presses Enter: the record is replayed and checked to
    # the end, as with --all, unless --step asks for prompts.
    pause = bool(getattr(args, "step", False)) or (not args.all and term.interactive_in)
    outcome = None
    try:
        moments = iter_replay(record, opponent=replay_opponent(record, args.opponent))
        first = True
        for moment in moments:
            if first:
                term.print(f"Replaying {args.file}: {record.env_id}, options {record.options}, seed "
                           f"{record.seed}, {total} step(s).")
                first = False
            lines = []
            if moment.step is None:
                lines.append("--- start of the game ---")
            else:
                lines.append(f"--- step {moment.index}/{total}: {moment.action_name} "
                             f"(reward {moment.reward:g}) ---")
            lines.extend(f"  - {text}" for text in (describe_event(e) for e in moment.events) if text)
            lines.append(_render_moment(moment))
            outcome = moment
            if pause:
                term.screen("\n".join(lines))
            else:
                term.print("\n".join(lines))
            if pause and moment.index < total:
                answer = term.ask("Enter: next step, q: quit: ")
                if answer is None:  # the input ended: check the rest of the record without pausing
                    pause = False
                elif answer.strip().lower() in ("q", "quit", "exit"):
                    term.print("Replay stopped. The rest of the record was not checked.")
                    return 0
    except RecordNeedsOpponentError as err:
        raise UsageError(str(err)) from None
    except RecordMismatchError as err:
        term.print(f"thermopylae replay: the record does not replay to the same game: {err}")
        return 1
    except (ValueError, TypeError) as err:
        raise UsageError(f"cannot replay {args.file}: {err}") from None
    finished = outcome is not None and outcome.done
    info = outcome.info if outcome is not None else {}
    won = bool(info.get("is_success")) if finished else None
    text = "unfinished" if not finished else ("won" if won else "lost")
    total_return = sum(float(step["reward"]) for step in record.steps)  # each was compared in the replay
    reason = end_reason(outcome.env) if finished else None
    term.print(f"End of the record: {text} (return {total_return:g}" + (f", {reason}" if reason else "")
               + "); the replay matches the record.")
    return 0
