# Where the queue-depth lines' time goes (docs/BENCHMARKS.md, "Queue depth: the disk's busy
# time"): qd.fio's cold 4 KiB random reads of a 48 MiB /dbfs file and of the raw disk, psync
# and libaio at iodepth 16, three times, each line between two reads of /proc/diskstats. A
# QDUTIL line per run: fio's KB/s and runtime, and the disk's reads, sectors, summed request
# times, busy time (io_ticks: at least one request in flight) and weighted time (their ratio
# is the average depth). Busybox sh, in the default root's /etc/fio:
#   make run INIT=/bin/sh DISK=direct SMP=1 ARGS="-c 'sh /etc/fio/qd-util.sh'"
ds() { grep " $1 " /proc/diskstats; }
field() { shift "$1"; echo "$1"; }
line() { # name dev file engine depth
  sync; echo 3 > /proc/sys/vm/drop_caches
  a=$(ds $2)
  fio --name=$1 --filename=$3 --size=48m --bs=4k --rw=randread --ioengine=$4 --iodepth=$5 \
      --io_size=4m --output-format=terse --terse-version=3 > /fat/t.out
  b=$(ds $2)
  t=$(cat /fat/t.out); oldifs=$IFS; IFS=';'; set -- $1 $t; IFS=$oldifs
  n=$1; bw=$8; rt=${10}
  echo "QDUTIL $n KBps=$bw runtime_ms=$rt reads=$(( $(field 4 $b) - $(field 4 $a) )) sectors=$(( $(field 6 $b) - $(field 6 $a) )) read_ms=$(( $(field 7 $b) - $(field 7 $a) )) busy_ms=$(( $(field 13 $b) - $(field 13 $a) )) queue_ms=$(( $(field 14 $b) - $(field 14 $a) ))"
}
grep -E ' /dbfs ' /proc/mounts
rm -rf /dbfs/qd; mkdir -p /dbfs/qd
fio --name=w --filename=/dbfs/qd/f --size=48m --bs=1m --rw=write --end_fsync=1 > /dev/null
for r in 1 2 3; do
  line dbfs-psync vdd /dbfs/qd/f psync 1
  line dbfs-libaio vdd /dbfs/qd/f libaio 16
  line raw-psync vdc /dev/vdc psync 1
  line raw-libaio vdc /dev/vdc libaio 16
done
rm -rf /dbfs/qd /fat/t.out
