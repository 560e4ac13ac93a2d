"""The browser app of ``thermopylae web``: a Starlette application
([`create_app`][thermopylae_agents.web.app.create_app]) whose page, script and style sheet are files of this
package (no build step, nothing fetched from the internet), and a JSON API over the games of
[`thermopylae_agents.web.sessions`][].

API (every body is a JSON object sent as ``Content-Type: application/json``; every error is
``{"error": "one line"}`` with HTTP 400, 403, 404, 405, 409, 413, 415 or 503, never a 500 for bad input).
A state-changing request (POST, PUT, PATCH, DELETE) is answered only when it comes from the app's own
origin or from no web page at all (see [`create_app`][thermopylae_agents.web.app.create_app]):

* ``GET /api/options``: the agent specs each game offers, the records of the command line;
* ``GET /api/status``: ``{"search": state}``, whether the search's compiled code is ready (``cold``,
  ``warming``, ``ready`` or ``failed``);
* ``POST /api/games``: ``{"game": "coop", "seats": [...], "seed"?}`` or ``{"game": "duel", "greek": ...,
  "persian": ..., "seed"?}`` (each side ``"human"`` or an agent; ``{"side": ..., "opponent": ...}`` is a
  person against an agent);
* ``GET /api/games/ID``: the position (table, legal actions, fight odds, log);
* ``POST /api/games/ID/action``: ``{"action": index}``, the person to move plays;
* ``POST /api/games/ID/advance``: the agent to move plays one move (the page times the calls);
* ``POST /api/games/ID/hint``: ``{"agent": spec}``, what that agent would do here;
* ``GET /api/games/ID/record``: the game record so far (``.jsonl``, as ``--record`` writes);
* ``DELETE /api/games/ID``: free the game now;
* ``POST /api/replays``: ``{"text": record, "name"?}`` (an upload) or ``{"listed": k}``;
* ``GET /api/replays/ID?step=K``: moment ``K`` of the replay (0: the deal).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from thermopylae_agents.web.sessions import (
    ClosedError,
    CoopSession,
    DuelSession,
    NotFoundError,
    Replay,
    RequestError,
    SearchWarmup,
    Store,
    agent_choices,
)
from thermopylae_env import COOP_ID, GREEK_ID, PERSIAN_ID
from thermopylae_env.record_format import GameRecord, load_record

__all__ = ["MAX_BODY_BYTES", "STATIC_TYPES", "PackageFiles", "create_app", "load_listed_records"]

MAX_BODY_BYTES = 16 * 1024 * 1024  # an uploaded record; far above a whole duel's record
# The kinds of file the page is made of, each with its content type written here: a type guessed from the
# machine's MIME table could differ between machines (a script as text/plain is refused under nosniff).
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                               "base-uri 'none'; frame-ancestors 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


class _TooLarge(Exception):
    pass


class _NotJson(Exception):
    pass


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=_HEADERS)


def _ok(body: Any) -> JSONResponse:
    return JSONResponse(body, headers=_HEADERS)


def _shown_header(value: str) -> str:
    """A header's value as a short line of an error message: a header is whatever the sender chose."""
    return "".join(c if c.isprintable() else "?" for c in value[:80])


def _origin(scheme: str, authority: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an origin, the default port written out; ``None`` if it is not one."""
    try:
        parts = urlsplit(f"{scheme}://{authority}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.path or parts.query or parts.fragment or parts.username is not None:
        return None
    return scheme, parts.hostname.lower(), port if port is not None else _DEFAULT_PORTS.get(scheme, -1)


def _cross_site(scope: Scope) -> str | None:
    """Why a state-changing request comes from another web site, or ``None``. A browser names the page's
    origin in ``Origin`` (and ``Sec-Fetch-Site``) on such requests, and another site can send a "simple"
    POST (``text/plain``, no preflight) that the Host check alone lets through; a request with neither
    header comes from no web page (curl, a script) and stays allowed."""
    headers = Headers(scope=scope)
    origin = headers.get("origin")
    if origin is not None:
        scheme, sep, authority = origin.partition("://")
        own = _origin(scope["scheme"], headers.get("host", ""))
        if not sep or own is None or _origin(scheme.lower(), authority) != own:
            return (f"requests from another origin ({_shown_header(origin)}) are refused; use the page "
                    "this server serves")
        return None
    if headers.get("sec-fetch-site", "").lower() == "cross-site":
        return "requests from another web site are refused; use the page this server serves"
    return None


class _SameOriginOnly:
    """Refuses (403) every state-changing request sent by another web site, before it is routed: the
    Host check stops DNS rebinding, but not a page of another site posting to the loopback address."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in _STATE_CHANGING:
            refused = _cross_site(scope)
            if refused is not None:
                await _error(403, refused)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class PackageFiles(StaticFiles):
    """The page's own files, the ``static/`` folder of this package, served by Starlette's ``StaticFiles``
    (which refuses a path that leaves the folder, ``..`` and symbolic links included). Only the kinds of
    ``STATIC_TYPES`` are served, with that content type and the app's security headers; anything else is a
    404."""

    def __init__(self) -> None:
        super().__init__(packages=[("thermopylae_agents.web", "static")])

    @property
    def folder(self) -> str:
        return str(self.all_directories[0])

    def file_response(self, full_path: Any, stat_result: os.stat_result, scope: Scope,
                      status_code: int = 200) -> Response:
        media = STATIC_TYPES.get(os.path.splitext(str(full_path))[1])
        if media is None:
            raise HTTPException(status_code=404)
        return FileResponse(full_path, status_code=status_code, stat_result=stat_result, media_type=media,
                            headers=_HEADERS)

    def page(self, name: str) -> Response:
        """One file of the folder, by its name (the page itself, the icon)."""
        path = os.path.join(self.folder, name)
        return self.file_response(path, os.stat(path), {})


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty body); ``RequestError`` for anything else, and
    ``_NotJson`` for a body not declared as ``application/json`` (a form or ``text/plain`` body is what
    another site's page can send without the browser asking this server first)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
        raise _TooLarge
    data = bytearray()
    async for chunk in request.stream():
        data.extend(chunk)
        if len(data) > MAX_BODY_BYTES:
            raise _TooLarge
    if not data.strip():
        return {}
    if request.headers.get("content-type", "").partition(";")[0].strip().lower() != "application/json":
        raise _NotJson
    try:
        body = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise RequestError("the request body is not UTF-8 text; send a JSON object") from None
    except (json.JSONDecodeError, RecursionError) as err:
        where = f" ({err.msg} at column {err.colno})" if isinstance(err, json.JSONDecodeError) else ""
        raise RequestError(f"the request body is not valid JSON{where}; send a JSON object") from None
    except ValueError as err:
        raise RequestError(f"the request body is not usable JSON ({str(err)[:80]})") from None
    if not isinstance(body, dict):
        raise RequestError(f"the request body must be a JSON object, got {type(body).__name__}")
    return body


def _unknown_keys(body: dict[str, Any], allowed: Sequence[str]) -> None:
    extra = sorted(set(body) - set(allowed))
    if extra:
        raise RequestError(f"unknown field(s) {', '.join(map(repr, extra))[:200]}; expected "
                           f"{', '.join(allowed)}")


def _duel_sides(body: dict[str, Any], choices: dict[str, list[str]]) -> tuple[Any, Any]:
    """``(greek, persian)`` of a new duel's request: each side by name, or the person's ``side`` and the
    agent ``opponent`` of the other side."""
    if "side" in body or "opponent" in body:
        _unknown_keys(body, ("game", "side", "opponent", "seed"))
        side, opponent = body.get("side"), body.get("opponent")
        if side not in ("greek", "persian"):
            raise RequestError(f"side must be one of greek, persian; got {json.dumps(side)[:40]}")
        offered = choices[PERSIAN_ID if side == "greek" else GREEK_ID]
        if not isinstance(opponent, str) or opponent not in offered:
            raise RequestError(f"the opponent must be one of {', '.join(offered)}; got "
                               f"{json.dumps(opponent)[:40]}")
        return ("human", opponent) if side == "greek" else (opponent, "human")
    _unknown_keys(body, ("game", "greek", "persian", "seed"))
    return body.get("greek"), body.get("persian")


def load_listed_records(paths: Sequence[str]) -> list[tuple[str, GameRecord]]:
    """The records named on the command line, read and checked now (``ValueError``: one line naming the
    file); the page refers to them by position only."""
    listed = []
    for path in paths:
        try:
            listed.append((os.path.basename(path) or path, load_record(path)))
        except FileNotFoundError:
            raise ValueError(f"--record {path}: no such file") from None
    return listed


def _read_upload(folder: Path, text: Any, name: Any) -> tuple[str, GameRecord]:
    """A record sent by the page, checked by the same reader as a record file (through a private file)."""
    if not isinstance(text, str):
        raise RequestError("text must be the record's text (a string)")
    if name is not None and (not isinstance(name, str) or len(name) > 200):
        raise RequestError("name must be a string of at most 200 characters")
    shown = name or "uploaded record"
    handle, temp = tempfile.mkstemp(suffix=".jsonl", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        try:
            record = load_record(temp)
        except ValueError as err:
            raise RequestError(f"not a valid game record: {str(err).replace(temp, shown)}") from None
    finally:
        os.unlink(temp)
    record.path = shown
    return shown, record


def create_app(records: Sequence[str] = (), agents: Sequence[str] = (), idle_seconds: float = 1800.0,
               max_games: int = 64, allowed_hosts: Sequence[str] | None = None,
               warm_search: bool = False, warmup: SearchWarmup | None = None) -> Starlette:
    """The app. ``records``: record files the page may open (read and checked now); ``agents``: agent
    specs offered besides the built-in and shipped ones; games idle for ``idle_seconds`` are freed, and at
    most ``max_games`` games and replays are held. ``warm_search``: compile the ``search`` agent in a
    background thread when the server starts (``thermopylae web`` does, unless ``--no-warm``), so that the
    first search hint does not wait for it; ``warmup`` tracks that compile (a new
    [`SearchWarmup`][thermopylae_agents.web.sessions.SearchWarmup] by default). ``allowed_hosts``: the
    ``Host`` headers accepted (the
    loopback names by default: another site cannot reach the app through DNS rebinding). A POST, PUT, PATCH
    or DELETE whose ``Origin`` is not the origin the request was sent to (``scheme://host:port``, the host
    one of ``allowed_hosts``), or that has no ``Origin`` and a ``Sec-Fetch-Site: cross-site``, is refused
    with 403; a JSON body must be sent as ``application/json`` (415 otherwise)."""
    listed = load_listed_records(records)
    choices = agent_choices(agents)
    folder = Path(tempfile.mkdtemp(prefix="thermopylae-web-"))
    store = Store(folder, idle_seconds=idle_seconds, max_items=max_games)
    files = PackageFiles()
    search = warmup if warmup is not None else SearchWarmup()

    async def page(request: Request) -> Response:
        return files.page("index.html")

    async def icon(request: Request) -> Response:
        return files.page("favicon.svg")  # what a browser asks for when a page names no icon

    async def status(request: Request) -> Response:
        return _ok({"search": search.state})

    async def options(request: Request) -> Response:
        return _ok({"agents": {"coop": choices[COOP_ID], "greek": choices[GREEK_ID],
                               "persian": choices[PERSIAN_ID]},
                    "records": [name for name, _ in listed], "max_players": 4})

    async def new_game(request: Request) -> Response:
        body = await _body(request)
        kind = body.get("game")
        store.has_room()
        key, path = store.new_path()
        if kind == "coop":
            _unknown_keys(body, ("game", "seats", "seed"))
            game = await run_in_threadpool(CoopSession, body.get("seats"), body.get("seed"), path,
                                           choices[COOP_ID], search)
        elif kind == "duel":
            greek, persian = _duel_sides(body, choices)
            game = await run_in_threadpool(DuelSession, greek, persian, body.get("seed"), path, choices)
        else:
            raise RequestError(f"game must be 'coop' or 'duel', got {json.dumps(kind)[:40]}")
        store.add(key, game)
        return _ok({"id": key, "view": game.view()})

    def _game(request: Request) -> tuple[Any, Any]:
        return store.get(request.path_params["key"], "coop|duel")

    async def show_game(request: Request) -> Response:
        game, guard = _game(request)

        def run() -> dict[str, Any]:
            with guard:  # in a worker thread: an agent's move in progress must not block the event loop
                return game.view()

        return _ok({"id": request.path_params["key"], "view": await run_in_threadpool(run)})

    async def act(request: Request) -> Response:
        body = await _body(request)
        _unknown_keys(body, ("action",))
        if "action" not in body:
            raise RequestError("the body must give the action: {\"action\": index}")
        game, guard = _game(request)

        def run() -> dict[str, Any]:
            with guard:
                game.act(body["action"])
                return game.view()

        return _ok({"id": request.path_params["key"], "view": await run_in_threadpool(run)})

    async def advance(request: Request) -> Response:
        _unknown_keys(await _body(request), ())
        game, guard = _game(request)

        def run() -> dict[str, Any]:
            with guard:
                game.advance()
                return game.view()

        return _ok({"id": request.path_params["key"], "view": await run_in_threadpool(run)})

    async def hint(request: Request) -> Response:
        body = await _body(request)
        _unknown_keys(body, ("agent",))
        game, guard = _game(request)

        def run() -> dict[str, Any]:
            with guard:
                return game.hint(body.get("agent"))

        return _ok(await run_in_threadpool(run))

    async def record(request: Request) -> Response:
        game, guard = _game(request)

        def run() -> str:
            with guard:
                return game.record_text()

        text = await run_in_threadpool(run)
        name = f"thermopylae-{game.kind}-{game.seed}.jsonl"
        headers = {**_HEADERS, "Content-Disposition": f'attachment; filename="{name}"'}
        return Response(text, media_type="application/jsonl", headers=headers)

    async def delete_game(request: Request) -> Response:
        _game(request)
        # in a worker thread: the game is closed only after a move in progress, which may take a while
        await run_in_threadpool(store.remove, request.path_params["key"])
        return _ok({"deleted": True})

    async def new_replay(request: Request) -> Response:
        body = await _body(request)
        _unknown_keys(body, ("text", "name", "listed"))
        if ("text" in body) == ("listed" in body):
            raise RequestError("send either the record's text ({\"text\": ...}) or the number of a record "
                               "given on the command line ({\"listed\": k})")
        if "listed" in body:
            k = body["listed"]
            if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(listed):
                raise RequestError(f"listed must be the number of a record given on the command line "
                                   f"(0..{len(listed) - 1}); {len(listed)} were given")
            name, loaded = listed[k]
        else:
            name, loaded = _read_upload(folder, body["text"], body.get("name"))
        store.has_room()
        replay = await run_in_threadpool(Replay, loaded, name)
        key = store.add(store.new_path()[0], replay)
        return _ok({"id": key, "view": replay.view(0)})

    async def show_replay(request: Request) -> Response:
        replay, _ = store.get(request.path_params["key"], "replay")
        step = request.query_params.get("step", "0")
        if not (step.isascii() and step.isdigit() and len(step) <= 7):
            raise RequestError(f"step must be an integer from 0 to {len(replay.moments) - 1}")
        return _ok({"id": request.path_params["key"], "view": replay.view(int(step))})

    async def on_request_error(request: Request, err: Exception) -> Response:
        return _error(400, str(err))

    async def on_not_found(request: Request, err: Exception) -> Response:
        return _error(404, str(err))

    async def on_closed(request: Request, err: Exception) -> Response:
        return _error(409, str(err))

    async def on_too_large(request: Request, err: Exception) -> Response:
        return _error(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")

    async def on_not_json(request: Request, err: Exception) -> Response:
        got = _shown_header(request.headers.get("content-type", "no Content-Type"))
        return _error(415, f"send the body as JSON with Content-Type: application/json (got {got})")

    async def on_http(request: Request, err: HTTPException) -> Response:
        detail = "no such page or file" if err.status_code == 404 else str(err.detail)
        return _error(err.status_code, detail)

    routes = [
        Route("/", page),
        Route("/favicon.ico", icon),
        Mount("/static", files),
        Route("/api/options", options),
        Route("/api/status", status),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{key}", show_game, methods=["GET"]),
        Route("/api/games/{key}", delete_game, methods=["DELETE"]),
        Route("/api/games/{key}/action", act, methods=["POST"]),
        Route("/api/games/{key}/advance", advance, methods=["POST"]),
        Route("/api/games/{key}/hint", hint, methods=["POST"]),
        Route("/api/games/{key}/record", record),
        Route("/api/replays", new_replay, methods=["POST"]),
        Route("/api/replays/{key}", show_replay),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        if warm_search:
            search.start()
        try:
            yield
        finally:
            store.close()
            shutil.rmtree(folder, ignore_errors=True)

    hosts = list(allowed_hosts) if allowed_hosts is not None else ["127.0.0.1", "localhost", "[::1]"]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts), Middleware(_SameOriginOnly)],
        exception_handlers={RequestError: on_request_error, NotFoundError: on_not_found,
                            ClosedError: on_closed, _TooLarge: on_too_large, _NotJson: on_not_json,
                            HTTPException: on_http},
        lifespan=lifespan,
    )
    app.state.store = store
    app.state.folder = folder
    app.state.search = search
    app.state.files = files
    return app
