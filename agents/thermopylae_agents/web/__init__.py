"""Watch and play in the browser: ``thermopylae web`` (extra ``web``: Starlette and uvicorn).

:mod:`~thermopylae_agents.web.app` is the Starlette app and its JSON API, :mod:`~.sessions` the games and
replays held on the server, :mod:`~.views` the positions as JSON and the hints; ``static/`` holds the page,
its script and its style sheet (hand-written, served from the package, nothing fetched from elsewhere).
"""
