"""Export SB3 (Maskable)PPO zips to the pickle-free policy format (``NAME.json`` + ``NAME.npz``).

    python scripts/export_policy.py --shipped                       # every shipped policy, beside its zip
    python scripts/export_policy.py runs/x/final_policy.zip --env-id thermopylae/Coop-v0 --out-dir out/

The same as the ``thermopylae-export-policy`` console script; see :mod:`thermopylae_agents.safe_policy`.
"""

from thermopylae_agents.safe_policy import main

if __name__ == "__main__":
    raise SystemExit(main())
