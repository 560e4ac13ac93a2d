"""Watch and play in the browser: ``thermopylae web`` (extra ``web``: Starlette and uvicorn).

[`app`][thermopylae_agents.web.app] is the Starlette app and its JSON API,
[`sessions`][thermopylae_agents.web.sessions] the games and replays held on the server,
[`views`][thermopylae_agents.web.views] the positions as JSON and the hints; ``static/`` holds the page, its
script and its style sheet (hand-written, served from the package, nothing fetched from elsewhere).
"""
