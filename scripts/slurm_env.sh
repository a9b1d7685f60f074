# Shared by slurm_up.sh and slurm_down.sh (sourced): where the test cluster keeps its state, and small helpers.
SLURM_DIR=${FROZEN_SWEEP_SLURM_DIR:-/tmp/frozen_sweep_slurm}
MARKER="# written by frozen_sweep scripts/slurm_up.sh"
DB_SOCKET=/run/mysqld/mysqld.sock

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND (a command or a function) until it succeeds.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "slurm: timed out after ${seconds}s waiting for $what" >&2
      return 1
    fi
    sleep 0.2
  done
}

# A stopped daemon can linger as a zombie for seconds: look at its state, not at `kill -0`.
alive() { [[ -r /proc/$1/status ]] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }
dead() { ! alive "$1"; }
