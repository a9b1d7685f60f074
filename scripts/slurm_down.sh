#!/usr/bin/env bash
# Stop the single-node test cluster started by slurm_up.sh: cancel its jobs, then stop the daemons it started,
# by their pidfiles, in the order slurmd, slurmctld, slurmdbd, mariadb, munged. Safe to run when nothing is up.
set -euo pipefail
source "$(dirname "$0")/slurm_env.sh"

no_jobs() { [[ -z $(squeue -h 2>/dev/null) ]]; }

if [[ -f $SLURM_DIR/run/slurmctld.pid ]] && squeue -h >/dev/null 2>&1; then
  squeue -h -o %A | sort -u | xargs -r scancel || true
  wait_for 20 "cancelled jobs to end" no_jobs || true
fi

for daemon in slurmd slurmctld slurmdbd mariadb munged; do
  pidfile=$SLURM_DIR/run/$daemon.pid
  [[ -f $pidfile ]] || continue
  pid=$(<"$pidfile")
  if [[ $pid =~ ^[0-9]+$ ]] && alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    wait_for 20 "$daemon ($pid) to stop" dead "$pid" || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
done
echo "slurm: test cluster stopped (its state stays in $SLURM_DIR until the next slurm_up.sh)"
