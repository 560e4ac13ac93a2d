"""``thermopylae web``: watch and play the games in a browser (extra ``web``: Starlette and uvicorn).

Serves the app of [`thermopylae_agents.web.app`][] on ``--host`` (default 127.0.0.1: this machine only)
and ``--port`` (default 8000; 0 picks a free port) and prints its address. ``--record FILE`` (repeatable)
offers a record file to the replay page; ``--agent SPEC`` (repeatable) offers an agent spec besides the
built-in players and the shipped policies (a page can choose only among the agents offered, and opens
no file but these records and its own uploads). The ``search`` agent's compiled code is prepared in a
background thread as the server starts (it answers requests meanwhile); ``--no-warm`` leaves that to the
first search hint or move.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Sequence

from thermopylae_agents.cli.args import error, float_argument, int_argument
from thermopylae_agents.policies.registry import check_agent_game, make_agent, parse_spec
from thermopylae_agents.web.sessions import agent_choices
from thermopylae_env import COOP_ID

__all__ = ["build_parser", "main"]


def build_parser(prog: str = "thermopylae web") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Watch and play the Thermopylae games in a "
                                     "browser: co-op with 1 to 4 seats (people or agents), the duel (each "
                                     "side a person or an agent), agents watched at a chosen speed, hints, "
                                     "replays of game records.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int_argument(0, 65535), default=8000,
                        help="the port (default 8000; 0: a free port, printed)")
    parser.add_argument("--record", action="append", default=[], metavar="FILE",
                        help="a game record the replay page may open (repeatable)")
    parser.add_argument("--agent", action="append", default=[], metavar="SPEC",
                        help="an agent spec to offer besides the built-in players and shipped policies, "
                        "e.g. my_policy.json (repeatable)")
    parser.add_argument("--idle-minutes", type=float_argument(0.0, 10080.0, low_open=True), default=30.0,
                        help="free a game after this many minutes without a request (default 30)")
    parser.add_argument("--max-games", type=int_argument(1, 10000), default=64,
                        help="the most games and replays held at once (default 64)")
    parser.add_argument("--no-warm", action="store_true",
                        help="do not compile the search agent in the background at start (the first search "
                        "hint or move then waits for it, up to about a minute)")
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "thermopylae web") -> int:
    args = build_parser(prog).parse_args(argv)
    import uvicorn  # extra: web  # noqa: F401 - a missing extra is reported before anything else is done

    from thermopylae_agents.web.app import create_app  # extra: web

    try:
        for spec in args.agent:
            parse_spec(spec)
            _check_loads(spec)
        app = create_app(records=args.record, agents=args.agent, idle_seconds=60.0 * args.idle_minutes,
                         max_games=args.max_games, allowed_hosts=_hosts(args.host),
                         warm_search=not args.no_warm)
    except (ValueError, OSError) as err:
        error(prog, str(err))
        return 2
    try:
        sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((args.host, args.port))
    except OSError as err:
        error(prog, f"cannot listen on {args.host}:{args.port}: {err.strerror or err}")
        return 2
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"{prog}: serving on http://{shown}:{port}/ (Ctrl-C stops)", flush=True)
    return _serve(app, sock)


def _check_loads(spec: str) -> None:
    """Build the agent ``spec`` once, for a game it plays, before serving: a model file that is missing,
    a folder or not a model is one line now, not an error page when someone picks it."""
    for env_id, specs in agent_choices([spec]).items():
        if spec not in specs:
            continue
        for size in (1, 2, 3, 4) if env_id == COOP_ID else (None,):
            options = {} if size is None else {"num_players": size}
            try:
                check_agent_game(spec, env_id, options)
            except ValueError:
                continue
            make_agent(spec, env_id, seed=0, env_kwargs=options)
            return
    check_agent_game(spec, COOP_ID)  # says why it fits no game (a description that does not read, ...)
    raise ValueError(f"agent {spec[:200]!r} plays none of the games")


def _hosts(host: str) -> list[str]:
    """The ``Host`` headers the app accepts: the loopback names, and the address it listens on."""
    names = ["127.0.0.1", "localhost", "[::1]"]
    if host not in ("0.0.0.0", "::"):
        names.append(f"[{host}]" if ":" in host else host)
    else:
        names.append("*")  # listening on every address: the person chose to be reached by any name
    return names


def _serve(app: object, sock: socket.socket) -> int:
    import uvicorn  # extra: web

    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    sys.stdout.flush()
    return 0
