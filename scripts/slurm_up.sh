#!/usr/bin/env bash
# Start a real single-node SLURM cluster on this machine, for tests and for trying `hydra/launcher=slurm` by hand.
# Needs root. Installs Debian's munge, slurmctld, slurmd, slurm-client, slurmdbd and mariadb-server when missing.
# Accounting (slurmdbd + MariaDB) is not optional: without sacct, submitit never learns that a job died.
# Everything stays on loopback; state, logs and pidfiles live in $FROZEN_SWEEP_SLURM_DIR (/tmp/frozen_sweep_slurm),
# wiped on every start so that no old job is recovered. Stop with scripts/slurm_down.sh.
set -euo pipefail
here=$(dirname "$0")
source "$here/slurm_env.sh"
log=$SLURM_DIR/log

if [[ $(id -u) -ne 0 ]]; then
  echo "slurm_up.sh must run as root (it installs packages, writes /etc/slurm and starts daemons)" >&2
  exit 1
fi

packages="munge slurmctld slurmd slurm-client slurmdbd mariadb-server"
if ! command -v slurmctld slurmd slurmdbd sbatch munged mariadbd >/dev/null; then
  echo "slurm: installing $packages…"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null
fi

for conf in /etc/slurm/slurm.conf /etc/slurm/slurmdbd.conf; do
  if [[ -f $conf ]] && ! grep -qF "$MARKER" "$conf"; then
    echo "slurm: $conf exists and was not written by this script; not touching a real cluster's config" >&2
    exit 1
  fi
done

"$here/slurm_down.sh" >/dev/null
rm -rf "$SLURM_DIR"
install -d -m 0755 "$SLURM_DIR" "$SLURM_DIR/state" "$SLURM_DIR/spool" "$SLURM_DIR/run" "$log"
install -d -m 0755 -o mysql -g mysql "$SLURM_DIR/mysql" "$SLURM_DIR/mysql-run" /run/mysqld
install -d -m 0755 -o munge -g munge /run/munge

cpus=$(nproc)
memory=$(awk '/MemAvailable/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
db_password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p /etc/slurm
cat >/etc/slurm/slurm.conf <<CONF
$MARKER
ClusterName=ci
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
CommunicationParameters=NoInAddrAny
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd.pid
SlurmctldLogFile=$log/slurmctld.log
SlurmdLogFile=$log/slurmd.log
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$((memory / cpus))
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/none
MinJobAge=300
KillWait=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
install -m 0600 /dev/null /etc/slurm/slurmdbd.conf
cat >/etc/slurm/slurmdbd.conf <<CONF
$MARKER
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
LogFile=$log/slurmdbd.log
PidFile=$SLURM_DIR/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$db_password
StorageLoc=slurm_acct_db
CONF

fail() {
  echo "slurm: $1; see $2:" >&2
  tail -20 "$2" >&2 || true
  exit 1
}
munge_works() { munge -n | unmunge; }
db_works() { mariadb-admin --socket="$DB_SOCKET" ping; }
dbd_works() { sacctmgr -n list cluster; }
node_idle() { [[ $(sinfo -h -o %T) == idle ]]; }

# 1. munge (reuse one that already answers, e.g. the machine's own)
if ! munge_works >/dev/null 2>&1; then
  [[ -f /etc/munge/munge.key ]] || runuser -u munge -- mungekey -c
  runuser -u munge -- /usr/sbin/munged
  wait_for 10 munged munge_works || fail "munged did not start" /var/log/munge/munged.log
  cp /run/munge/munged.pid "$SLURM_DIR/run/munged.pid"
fi

# 2. MariaDB, its files owned by mysql (else it exits silently), no network
mariadb-install-db --user=mysql --datadir="$SLURM_DIR/mysql" --skip-test-db >"$log/mariadb-install.log" 2>&1 ||
  fail "mariadb-install-db failed" "$log/mariadb-install.log"
setsid mariadbd --user=mysql --datadir="$SLURM_DIR/mysql" --skip-networking --socket="$DB_SOCKET" \
  --pid-file="$SLURM_DIR/mysql-run/mariadb.pid" --log-error="$log/mariadb.log" </dev/null >/dev/null 2>&1 &
echo $! >"$SLURM_DIR/run/mariadb.pid"
wait_for 30 mariadb db_works || fail "mariadbd did not start" "$log/mariadb.log"
mariadb --socket="$DB_SOCKET" -e "CREATE USER 'slurm'@'localhost' IDENTIFIED BY '$db_password';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"

# 3. accounting daemon, and the cluster registered in it
slurmdbd
wait_for 30 slurmdbd dbd_works || fail "slurmdbd did not answer" "$log/slurmdbd.log"
sacctmgr -i add cluster ci >/dev/null

# 4. controller and the node daemon (a second slurmd would kill the first)
slurmctld
slurmd -N localhost
wait_for 30 "the node to be idle" node_idle || fail "the node did not come up" "$log/slurmd.log"
echo "slurm: test cluster up: partition debug, 1 node, $cpus CPUs, ${memory} MB (state in $SLURM_DIR)"
