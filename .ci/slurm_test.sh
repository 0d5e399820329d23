#!/usr/bin/env bash
# The SLURM profile against a real single-node Slurm.
#
# Installs Debian's slurm-wlm and munge, writes a slurm.conf for this machine (its CPUs, no
# accounting, no cgroups), starts munged, slurmctld and slurmd, then runs a small config twice:
# with `--cores 2` and through `--profile profiles/slurm` (snakemake-executor-plugin-slurm). It
# checks that the jobs went through sbatch (their Slurm logs), that the tables were written, and
# that both runs wrote byte-identical CSV tables. Where Slurm cannot be installed or started
# (not root, no apt, daemons refused), it says so and exits 0: a skip, not a pass.
#
# Usage: bash .ci/slurm_test.sh [workdir]      (run from anywhere; needs `make setup` first)
set -uo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-$(mktemp -d /tmp/roundtrip_slurm.XXXXXX)}"
PY="$REPO/.venv/bin/python"
T0=$(date +%s)

skip() { echo "SLURM TEST SKIPPED: $*"; exit 0; }
fail() { echo "SLURM TEST FAILED: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root to install and start Slurm"
[ -x "$PY" ] || fail "no $PY: run make setup first"
"$PY" -c "import snakemake_executor_plugin_slurm" 2>/dev/null \
  || fail "snakemake-executor-plugin-slurm is not installed (it is in the test extra)"

# -- install and configure ------------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || skip "no apt-get to install slurm-wlm and munge"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
     --no-install-recommends slurm-wlm munge >/dev/null) || skip "apt-get could not install slurm-wlm munge"
fi
HOST=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))  # jobs ask --mem
TMP_MB=$(df -Pm /tmp | awk 'NR == 2 {print $4}')                          # and --tmp
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /etc/munge
cat > /etc/slurm/slurm.conf <<EOF
ClusterName=roundtrip
SlurmctldHost=$HOST
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM_MB TmpDisk=$TMP_MB State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

# -- start the daemons ----------------------------------------------------------------------
if ! pgrep -x munged >/dev/null; then
  [ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
  chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null
  chmod 400 /etc/munge/munge.key
  runuser -u munge -- /usr/sbin/munged 2>/dev/null || /usr/sbin/munged --force 2>/dev/null \
    || skip "munged does not start here"
fi
# (re)start with this slurm.conf: a daemon of an earlier run may hold an older one
pkill -x slurmd 2>/dev/null; pkill -x slurmctld 2>/dev/null; sleep 1
slurmctld || skip "slurmctld does not start here"
slurmd || skip "slurmd does not start here"
for _ in $(seq 60); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
  [ "$state" = "idle" ] || [ "$state" = "mix" ] && break
  [ "$state" = "down" ] || [ "$state" = "drain" ] && scontrol update NodeName="$HOST" State=RESUME 2>/dev/null
  sleep 1
done
[ "$state" = "idle" ] || [ "$state" = "mix" ] \
  || skip "the Slurm node never became idle (state '$state'; see /var/log/slurm)"
srun -t 1 true 2>/dev/null || skip "srun cannot run a job on this node"
echo "Slurm up: node $HOST, $CPUS CPUs, $(( $(date +%s) - T0 )) s"

# -- the same small config, locally and through the SLURM profile ---------------------------
mkdir -p "$WORK/local" "$WORK/slurm"
for d in local slurm; do
  cat > "$WORK/$d/config.yaml" <<EOF
datasets:
  photos: {type: skimage, images: [astronaut, coffee]}
  crops: {type: skimage, images: [chelsea], protocol: model_size, size: 128}
models:
  identity: {type: identity}
  jpeg_q50: {type: jpeg, quality: 50}
  bicubic_x4: {type: resample, factor: 4}
metrics: {missing_weights: n/a}
tables: {bootstrap: {samples: 200}}
EOF
done
SMK=("$PY" -m snakemake -s "$REPO/Snakefile" --configfile config.yaml)
(cd "$WORK/local" && "${SMK[@]}" --cores 2 >run.log 2>&1) || fail "the local run failed: $WORK/local/run.log"
(cd "$WORK/slurm" && timeout 600 "${SMK[@]}" --profile "$REPO/profiles/slurm" \
   --slurm-keep-successful-logs >run.log 2>&1) \
  || { tail -40 "$WORK/slurm/run.log"; fail "the Slurm run failed: $WORK/slurm/run.log"; }

# -- checks -----------------------------------------------------------------------------------
submitted=$(grep -c "has been submitted with SLURM jobid" "$WORK/slurm/run.log")
logs=$(find "$WORK/slurm/.snakemake/slurm_logs" -name '*.log' 2>/dev/null | wc -l)
[ "$submitted" -ge 3 ] || fail "expected at least 3 jobs submitted with sbatch, found $submitted"
[ "$logs" -eq "$submitted" ] || fail "$submitted jobs submitted but $logs Slurm job logs"
grep -q "Group job tables" "$WORK/slurm/run.log" || fail "the table jobs were not grouped"
n=0
for t in "$WORK/local/results/tables/"*.csv; do
  name=$(basename "$t")
  [ -s "$WORK/slurm/results/tables/$name" ] || fail "the Slurm run did not write $name"
  cmp -s "$t" "$WORK/slurm/results/tables/$name" || fail "$name differs between --cores 2 and Slurm"
  n=$((n + 1))
done
[ "$n" -ge 4 ] || fail "expected at least 4 tables, found $n"
echo "SLURM TEST PASSED: $submitted jobs through sbatch (and their logs), $n tables byte-identical to the --cores 2 run," \
     "$(( $(date +%s) - T0 )) s in all"
