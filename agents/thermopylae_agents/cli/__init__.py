"""The command line: ``thermopylae <subcommand>`` ([`app`][thermopylae_agents.cli.app]), one module per
subcommand, and the console-script aliases ([`console`][thermopylae_agents.cli.console]).

``main`` and the other attributes of the old flat ``thermopylae_agents.cli`` module
are still found here (with a ``DeprecationWarning``).
"""

from thermopylae_agents._moved import forward_attributes

__getattr__ = forward_attributes(__name__)
