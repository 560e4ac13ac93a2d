"""The command line: ``thermopylae <subcommand>`` ([`app`][thermopylae_agents.cli.app]), one module per
subcommand, and the one way of saying that an optional dependency is missing
([`console`][thermopylae_agents.cli.console])."""
