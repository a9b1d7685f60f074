"""One job: its checked config and fingerprint (job_config.py), what it would do (dry_run.py), the run itself
(runner.py) and its test (test_set.py)."""
