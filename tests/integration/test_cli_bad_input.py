"""Every ``thermopylae SUBCOMMAND`` given bad input (a missing file, a folder for a file, a number out of
range, bytes that are not UTF-8): one error line on standard error (after argparse's usage lines, where
argparse refuses it), exit status 2, no traceback, in its own process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# One process per case, a few seconds each (torch and the env modules import): CI's slow step runs them.
pytestmark = pytest.mark.slow

# {missing}: a path that does not exist; {folder}: a folder; {bad}: a file of bytes that are not UTF-8 (and
# not a zip, a CSV or JSON); {out}: a path that can be written.
CASES: dict[str, list[list[str]]] = {
    "play --game coop": [["--hints", "{missing}.zip"], ["--hints", "{folder}"], ["--record", "{folder}"],
                         ["--seed", "18446744073709551616"], ["--side", "persian"]],
    "play --game duel": [["--opponent", "{missing}.zip"], ["--opponent", "{folder}"],
                         ["--opponent", "{bad}.zip"], ["--hints", "{bad}.json"], ["--seed", "-1"],
                         ["--players", "2"]],
    "replay": [["{missing}.jsonl"], ["{folder}"], ["{bad}.jsonl"], ["/dev/zero"]],
    "train": [["coop", "--config", "{missing}.yaml"], ["coop", "--config", "{folder}"],
              ["coop", "--config", "{bad}.yaml"], ["coop", "--resume", "{missing}"],
              ["coop", "--resume", "{bad}.zip"], ["coop", "--timesteps", "0"]],
    "evaluate": [["{missing}.zip"], ["{folder}/"], ["{bad}.zip"], ["{bad}.json"], ["--replot", "{folder}"],
                 ["--replot", "{bad}.json"], ["--curve", "{missing}"], ["--games", "0"],
                 ["--persian-deck", "{bad}.csv"], ["--persian-deck", "{folder}"], ["--out", "{folder}"],
                 ["--game", "coop", "--side", "greek"]],
    "export": [["{missing}.zip", "--game", "duel", "--side", "greek"],
               ["{folder}", "--game", "duel", "--side", "greek"],
               ["{bad}.zip", "--game", "duel", "--side", "greek"],
               ["--out-dir", "{out}", "--policy", "{bad}.json"],
               ["--players", "9", "x.zip", "--game", "coop"], ["x.zip", "--game", "duel"]],
    "exploitability": [["{missing}.zip", "--side", "greek"], ["{folder}", "--side", "greek"],
                       ["{bad}.json", "--side", "greek"], ["--config", "{missing}.json"],
                       ["--config", "{folder}"], ["--config", "{bad}.json"], ["--budget", "0"]],
    "bound": [["--merge", "{missing}.jsonl"], ["--merge", "{folder}"], ["--merge", "{bad}.jsonl"],
              ["--gaps", "{bad}.json"], ["--deals", "0"], ["--out", "{folder}"]],
    "render": [["--out", "{folder}"], ["--out", "{out}.gif", "--agent", "{missing}.zip"],
               ["--out", "{out}.gif", "--agent", "{bad}.zip"], ["--every", "0", "--out", "{out}.gif"]],
    "rllib": [["train", "--run-dir", "{folder}", "--seed", "-1"],
              ["train", "--game", "duel", "--players", "2", "--run-dir", "{folder}"]],
    "ppo-native": [["--run-dir", "{bad}.json"], ["--num-envs", "0"], ["--persian-deck", "{bad}.csv"]],
    "duel-table": [["--out", "{folder}"], ["--games", "0"]],
    "web": [["--record", "{missing}.jsonl"], ["--record", "{folder}"], ["--record", "{bad}.jsonl"],
            ["--agent", "{missing}.zip"], ["--agent", "{bad}.zip"], ["--port", "70000"]],
    "distill": [["--config", "{missing}.yaml"], ["--config", "{folder}"], ["--config", "{bad}.yaml"],
                ["--start", "{bad}.zip"], ["--games", "0"]],
}


def _params() -> list:
    return [pytest.param(command, argv, id=f"thermopylae {command} {' '.join(argv)}")
            for command, cases in CASES.items() for argv in cases]


@pytest.mark.parametrize(("command", "argv"), _params())
def test_bad_input_is_one_error_line_and_exit_status_2(command, argv, tmp_path):
    (tmp_path / "folder").mkdir()
    for suffix in (".zip", ".json", ".jsonl", ".yaml", ".csv"):
        (tmp_path / f"bad{suffix}").write_bytes(b"\xff\xfe\x00 not UTF-8")
    names = {"missing": tmp_path / "missing", "folder": tmp_path / "folder", "bad": tmp_path / "bad",
             "out": tmp_path / "out"}
    argv = [part.format(**{k: str(v) for k, v in names.items()}) for part in argv]
    command_line = [sys.executable, "-m", "thermopylae_agents", *command.split(), *argv]
    done = subprocess.run(command_line, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          stdin=subprocess.DEVNULL)
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    extra = "needs the 'rllib' extra" in done.stderr  # the one line of a missing optional dependency
    assert err and (": error: " in err[-1] or extra), done.stderr[-2000:]
    before = err[:-1]  # only argparse's usage may come before the error line
    assert not before or before[0].startswith("usage:"), done.stderr[-2000:]
    assert not Path(tmp_path / "out.gif").exists()
