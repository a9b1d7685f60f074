"""One job: its checked config (job_config.py) and fingerprint (fingerprint.py), what it would do (dry_run.py), the run
itself (runner.py) and its test (test_set.py)."""
