#!/bin/bash
# trinity in the guest (mk/trinity.mk, tests/trinity/fuzz-kernel.sh runs it as the first
# process of a Debian root with trinity): `guest.sh SEED OPS CHILDREN` runs Debian's trinity
# as the unprivileged user nobody (uid and gid 65534, no supplementary groups) in a fresh
# scratch directory on /dbfs, with seed SEED, until its children have made OPS system calls
# in all, then prints `trinity-guest: seed SEED, N syscalls, exit STATUS`.
seed=$1 ops=$2 children=${3:-4}

# Left out by design: calls that end the run or the machine whatever the kernel does, not
# what the kernel does with bad input.
#   reboot                          powers the machine off (root only, named for safety)
#   kill tkill tgkill               pid -1 or a process group kills trinity itself (every
#   rt_sigqueueinfo rt_tgsigqueueinfo  process of uid 65534), and the main process or its
#   pidfd_send_signal               watchdog killed ends the run early
excluded="reboot kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo pidfd_send_signal"

dir=/dbfs/trinity-$seed
rm -rf "$dir" && mkdir -p "$dir/victims" || exit 1
echo victim >"$dir/victims/file" && mkdir "$dir/victims/dir"
chown -R 65534:65534 "$dir" && chmod 755 "$dir"
cd "$dir" || exit 1

args=(-q -s "$seed" -N "$ops" -C "$children" -V "$dir/victims" -l off)
for c in $excluded; do args+=(-x "$c"); done
echo "trinity-guest: seed $seed, $ops syscalls, $children children, excluded: $excluded"
echo "trinity-guest: replay with: make fuzz-kernel TRINITY_SEED=$seed TRINITY_OPS=$ops"
out=$(mktemp)
# The user change by python3 (setpriv first asks prctl(PR_SET_KEEPCAPS), not implemented here).
env -i PATH=/usr/bin:/bin HOME="$dir" python3 -c '
import os, sys
os.setgroups([]); os.setgid(65534); os.setuid(65534)
os.execv("/usr/bin/trinity", ["trinity"] + sys.argv[1:])' "${args[@]}" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
ran=$(sed -n 's/.*Ran \([0-9]*\) syscalls.*/\1/p' "$out" | tail -1)
rm -f "$out"
cd / && sync
echo "trinity-guest: seed $seed, ${ran:-0} syscalls, exit $status"
