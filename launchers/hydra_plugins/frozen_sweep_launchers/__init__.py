"""frozen_sweep's Hydra launchers, built on submitit: `hydra/launcher=local_gpus` and `hydra/launcher=slurm`.

Both launchers share one life cycle (_base.py): compose and validate every job before any starts (_plan.py), skip the
jobs whose directory holds a completed result, run the rest through submitit as a resumable task (_task.py), record
every job that dies without a result as failed (_outcome.py), report progress as jobs finish and a summary at the
end (_progress.py); the sweep exits non-zero when any job failed.
"""
