"""One job: its checked config and fingerprint (job_config.py), what it would do (dry_run.py), and the run itself
(runner.py)."""
