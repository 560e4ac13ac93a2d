"""The game record file format (version 1): [`GameRecord`][thermopylae_env.record_format.GameRecord] and
[`load_record`][thermopylae_env.record_format.load_record], which reads a ``.jsonl`` record and validates
every line (a malformed file raises ``ValueError`` naming the line and the problem). The format itself and how
records are written and replayed: [`thermopylae_env.records`][].

A record is data and never runs code: reading one parses JSON only (a regular file of at most
[`MAX_RECORD_BYTES`][thermopylae_env.record_format.MAX_RECORD_BYTES], lines of at most
[`MAX_LINE_BYTES`][thermopylae_env.record_format.MAX_LINE_BYTES], nesting at most
[`MAX_JSON_DEPTH`][thermopylae_env.record_format.MAX_JSON_DEPTH]). Its header ``options`` are checked by
[`record_options_problem`][thermopylae_env.record_format.record_options_problem] against
[`ENV_OPTIONS`][thermopylae_env.record_format.ENV_OPTIONS], the options each environment takes and their JSON
types, before any environment is made: no ``gymnasium.make`` argument of its own (``max_episode_steps``, ...),
no option a replay sets itself, and no file name (a custom Persian deck is recorded as its rows).
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "FORMAT",
    "VERSION",
    "ENV_PREFIX",
    "BUILT_IN_OPPONENTS",
    "RESERVED_OPTIONS",
    "ENV_OPTIONS",
    "MAX_RECORD_BYTES",
    "MAX_LINE_BYTES",
    "MAX_JSON_DEPTH",
    "GameRecord",
    "load_record",
    "record_options_problem",
]


FORMAT = "thermopylae-record"
VERSION = 1
RESERVED_OPTIONS = ("render_mode", "record_events")
ENV_PREFIX = "thermopylae/"
BUILT_IN_OPPONENTS = ("heuristic", "random")  # part of the duel env's definition: no file is loaded

# The options a record may give each environment and the JSON type each must have: the keyword arguments
# of the env classes less RESERVED_OPTIONS (a test holds the two together). Values are checked by the env.
_COMMON_OPTIONS = {"illegal_action": "string", "illegal_action_penalty": "number"}
_DUEL_OPTIONS = {"opponent": "string", "config": "duel config", **_COMMON_OPTIONS}
ENV_OPTIONS: dict[str, dict[str, str]] = {
    "thermopylae/Coop-v0": {"num_players": "integer", "persian_deck": "deck rows", **_COMMON_OPTIONS,
                            "reward_shaping": "number"},
    "thermopylae/DuelGreek-v0": _DUEL_OPTIONS,
    "thermopylae/DuelPersian-v0": _DUEL_OPTIONS,
}


@dataclass
class GameRecord:
    """A validated record: ``header``, the ``steps`` (dicts, in order) and the ``result`` line."""

    header: dict[str, Any]
    steps: list[dict[str, Any]]
    result: dict[str, Any]
    path: str | None = None

    @property
    def env_id(self) -> str:
        return self.header["env_id"]

    @property
    def options(self) -> dict[str, Any]:
        return self.header["options"]

    @property
    def seed(self) -> int:
        return self.header["seed"]

    @property
    def actions(self) -> list[int]:
        return [step["action"] for step in self.steps]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _option_problem(key: str, kind: str, value: Any) -> str | None:
    if kind == "integer" and not _is_int(value):
        return f"{key} must be an integer, got {_shown(value)}"
    if kind == "number" and not _is_number(value):
        return f"{key} must be a number, got {_shown(value)}"
    if kind == "string" and not isinstance(value, str):
        return f"{key} must be a string, got {_shown(value)}"
    if kind == "deck rows" and value is not None and not isinstance(value, list):
        got = "a string (a file name?)" if isinstance(value, str) else f"a {type(value).__name__}"
        return (f"{key} must be the deck's rows (a list of [white, red, bonus]) or null, got {got}: a record "
                "holds its deck and never names a file")
    if kind == "duel config" and value is not None and not isinstance(value, dict):
        return f"{key} must be a duel config object (DuelConfig.to_dict) or null, got {_shown(value)}"
    return None


def record_options_problem(env_id: Any, options: Any) -> str | None:
    """What is wrong with a record's ``env_id`` and header ``options`` (``None``: nothing), checked before
    any environment is made: ``env_id`` must be one of
    [`ENV_OPTIONS`][thermopylae_env.record_format.ENV_OPTIONS], ``options`` a dict of that environment's
    option names with values of their JSON type;
    [`RESERVED_OPTIONS`][thermopylae_env.record_format.RESERVED_OPTIONS] are refused."""
    if not isinstance(env_id, str) or not env_id.startswith(ENV_PREFIX):
        return f"env_id must name an environment of this package ({ENV_PREFIX}...), got {_shown(env_id)}"
    if env_id not in ENV_OPTIONS:
        return (f"unknown env_id {_shown(env_id)}: not an environment of this package "
                f"(known: {', '.join(ENV_OPTIONS)})")
    if not isinstance(options, dict):
        return f"options must be an object, got {_shown(options)}"
    reserved = [k for k in options if k in RESERVED_OPTIONS]
    if reserved:
        return f"options must not set {reserved} (a replay sets them)"
    known = ENV_OPTIONS[env_id]
    for key, value in options.items():
        if key not in known:
            return (f"the options do not fit {env_id}: unknown option {_shown(key)} "
                    f"(it takes {', '.join(known)})")
        problem = _option_problem(key, known[key], value)
        if problem:
            return f"the options do not fit {env_id}: {problem}"
    return None


def _check_header(obj: dict[str, Any]) -> str | None:
    if obj.get("type") != "header":
        return f"the first line must be the header (type 'header'), got type {obj.get('type')!r}"
    if obj.get("format") != FORMAT:
        return f"format must be {FORMAT!r}, got {obj.get('format')!r}: not a thermopylae game record"
    version = obj.get("version")
    if not _is_int(version):
        return f"version must be an integer, got {version!r}"
    if version > VERSION:
        return f"record version {version} is newer than this package reads (up to {VERSION})"
    if version < 1:
        return f"unknown record version {version}"
    problem = record_options_problem(obj.get("env_id"), obj.get("options"))
    if problem:
        return problem
    if not _is_int(obj.get("seed")) or not 0 <= obj["seed"] < 2**64:
        return f"seed must be an integer in 0..2**64-1, got {obj.get('seed')!r}"
    if "agent" in obj and not isinstance(obj["agent"], str):
        return f"agent must be a string, got {obj['agent']!r}"
    reset = obj.get("reset", {"events": []})
    if not isinstance(reset, dict):
        return f"reset must be an object, got {reset!r}"
    return _check_events(reset.get("events", []), "reset events") or _check_digest(reset.get("obs"))


def _check_events(events: Any, what: str) -> str | None:
    if not isinstance(events, list):
        return f"{what} must be a list, got {type(events).__name__}"
    for k, event in enumerate(events):
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            return f"{what}[{k}] must be an object with a string 'type', got {event!r}"
    return None


def _check_digest(digest: Any) -> str | None:
    if digest is not None and not isinstance(digest, str):
        return f"obs must be a digest string, got {digest!r}"
    return None


def _check_step(obj: dict[str, Any], expected: int) -> str | None:
    if obj.get("step") != expected:
        return f"step number {obj.get('step')!r} where {expected} was expected"
    action = obj.get("action")
    if not _is_int(action) or action < 0:
        return f"action must be an integer >= 0, got {action!r}"
    if not isinstance(obj.get("action_name"), str):
        return f"action_name must be a string, got {obj.get('action_name')!r}"
    if not _is_number(obj.get("reward")):
        return f"reward must be a finite number, got {obj.get('reward')!r}"
    for key in ("terminated", "truncated"):
        if not isinstance(obj.get(key, False), bool):
            return f"{key} must be true or false, got {obj.get(key)!r}"
    if "events" not in obj:
        return "a step needs its events (a list, possibly empty)"
    return _check_events(obj["events"], "events") or _check_digest(obj.get("obs"))


def _check_result(obj: dict[str, Any], steps: int, ended: bool) -> str | None:
    if obj.get("steps") != steps:
        return f"the result counts {obj.get('steps')!r} steps but the record holds {steps}"
    finished = obj.get("finished")
    if not isinstance(finished, bool):
        return f"finished must be true or false, got {finished!r}"
    if finished != ended:
        return (f"finished is {str(finished).lower()} but the last step "
                f"{'ended' if ended else 'did not end'} the game")
    if not _is_number(obj.get("return")):
        return f"return must be a finite number, got {obj.get('return')!r}"
    if obj.get("won") not in (True, False, None):
        return f"won must be true, false or null, got {obj.get('won')!r}"
    reason = obj.get("reason")
    if reason is not None and not isinstance(reason, str):
        return f"reason must be a string or null, got {reason!r}"
    if not finished and (obj.get("won") is not None or reason is not None):
        return "an unfinished game has no winner and no reason (won and reason must be null)"
    return None


MAX_RECORD_BYTES = 64 * 1024 * 1024  # far above any game's record; refuses a runaway file quickly
MAX_LINE_BYTES = 1024 * 1024
MAX_JSON_DEPTH = 32  # a record nests a few levels (step -> events -> fight -> results)


def _read_text(path: Path) -> str:
    """The text of a record file: a regular file of at most
    [`MAX_RECORD_BYTES`][thermopylae_env.record_format.MAX_RECORD_BYTES], UTF-8."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise ValueError(f"{path}: cannot read the record: {err.strerror or err}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ValueError(f"{path}: is a folder, not a record file")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path}: not a regular file (a device, pipe or socket); a record is a file")
    if info.st_size > MAX_RECORD_BYTES:
        raise ValueError(f"{path}: {info.st_size} bytes, more than a record may hold ({MAX_RECORD_BYTES})")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_RECORD_BYTES + 1)
    except OSError as err:
        raise ValueError(f"{path}: cannot read the record: {err.strerror or err}") from None
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError(f"{path}: more than a record may hold ({MAX_RECORD_BYTES} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{path}: not a UTF-8 text file (byte {err.start}: {err.reason}); a record is JSON lines"
        ) from None


def _depth(value: Any, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return False


def _parse_line(line: str) -> Any:
    """One JSON value; ``ValueError`` with the problem for bad JSON, deep nesting or huge numbers."""
    if len(line) > MAX_LINE_BYTES:
        raise ValueError(f"a line of {len(line)} characters (at most {MAX_LINE_BYTES})")
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON ({err.msg} at column {err.colno})") from None
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as err:  # e.g. an integer of thousands of digits
        raise ValueError(f"not a usable JSON value ({str(err).splitlines()[0][:80]})") from None
    if _depth(obj, MAX_JSON_DEPTH):
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return obj


def load_record(path: str | os.PathLike[str]) -> GameRecord:
    """Read and validate a record file. A malformed record raises ``ValueError`` naming the file, the line
    and the problem (also a folder, a device or pipe, a file over
    [`MAX_RECORD_BYTES`][thermopylae_env.record_format.MAX_RECORD_BYTES], JSON nested deeper than
    [`MAX_JSON_DEPTH`][thermopylae_env.record_format.MAX_JSON_DEPTH]); a missing file raises
    ``FileNotFoundError``."""
    path = Path(path)
    text = _read_text(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise ValueError(f"{path}: the file is empty (a record starts with a header line)")

    def fail(number: int, problem: str) -> ValueError:
        return ValueError(f"{path}: line {number}: {problem}")

    header: dict[str, Any] | None = None
    steps: list[dict[str, Any]] = []
    result: dict[str, Any] | None = None
    ended = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise fail(number, "empty line (every line holds one JSON object)")
        try:
            obj = _parse_line(line)
        except ValueError as err:
            raise fail(number, str(err)) from None
        if not isinstance(obj, dict):
            raise fail(number, f"expected a JSON object, got {type(obj).__name__}")
        if number == 1:
            problem = _check_header(obj)
            if problem:
                raise fail(number, problem)
            header = obj
            continue
        if result is not None:
            raise fail(number, "a line after the result line (the result must be the last line)")
        kind = obj.get("type")
        if kind == "step":
            if ended:
                raise fail(number, "a step after the step that ended the game")
            problem = _check_step(obj, len(steps) + 1)
            if problem:
                raise fail(number, problem)
            steps.append(obj)
            ended = bool(obj.get("terminated") or obj.get("truncated"))
        elif kind == "result":
            problem = _check_result(obj, len(steps), ended)
            if problem:
                raise fail(number, problem)
            result = obj
        elif kind == "header":
            raise fail(number, "a second header line")
        else:
            raise fail(number, f"unknown line type {kind!r} (expected 'step' or 'result')")
    if result is None:
        raise fail(len(lines), "the record ends without a result line (an incomplete record)")
    assert header is not None
    return GameRecord(header=header, steps=steps, result=result, path=os.fspath(path))


# --------------------------------------------------------------------------------------------- replay
