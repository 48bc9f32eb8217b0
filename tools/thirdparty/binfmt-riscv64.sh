# Sourced by fetch-build.sh (`check`) and tools/debian/build-tree.sh: riscv64 programs run on
# the host through qemu-riscv64-static for the length of one run.
#
# binfmt_riscv64_for_run ENTRY: make riscv64 ELF files executable through a binfmt_misc entry
# with flags F (the interpreter is opened now, so a chroot needs no copy of it) and P (argv[0]
# kept: busybox needs it). The machine's own qemu-riscv64 entry is used if it is enabled and
# has flag F; otherwise ENTRY-PID is registered, and binfmt_misc mounted if it was not. Sets
# binfmt_cleanup to the shell code that undoes what was done (for an EXIT trap): it removes this
# run's entry, and unmounts binfmt_misc only if this run mounted it and no other entry is left,
# so runs at the same time (two checkouts building) do not pull the ground from under each
# other. Needs root; uses the caller's log and die.
binfmt_riscv64_for_run() {
	local binfmt=/proc/sys/fs/binfmt_misc entry=$1-$$ unmount=""
	binfmt_cleanup=""
	if [ ! -e "$binfmt/register" ]; then
		mount -t binfmt_misc binfmt_misc "$binfmt" || die "cannot mount binfmt_misc"
		unmount="[ -n \"\$(ls $binfmt | grep -vx 'register\|status')\" ] || umount $binfmt || true"
	fi
	if grep -qsx enabled "$binfmt/qemu-riscv64" && grep -qs '^flags: .*F' "$binfmt/qemu-riscv64"; then
		log "using the machine's binfmt_misc entry qemu-riscv64"
		return
	fi
	if [ -e "$binfmt/$entry" ]; then echo -1 >"$binfmt/$entry"; fi
	local magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xf3\x00'
	local mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
	printf '%s' ":$entry:M::$magic:$mask:$(command -v qemu-riscv64-static):FP" >"$binfmt/register" ||
		die "cannot register a binfmt_misc entry for riscv64"
	binfmt_cleanup="echo -1 >$binfmt/$entry 2>/dev/null || true; $unmount"
}
