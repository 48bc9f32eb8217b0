# pjdfstest-both: the in-guest half of `make pjdfstest-guest` (installed as
# /bin/pjdfstest-both). Runs pjdfstest-run on /fat, then on /dbfs, over the same test
# directories (default: all), prints each file system's per-directory table, its summary line
# and its failures, and exits with the dbfs run's status: vfat cannot pass what needs owners,
# permission bits, links, symlinks, FIFOs or sockets, so its failures are reported, not fatal.
#
#   sh /bin/pjdfstest-both [-d] [TESTDIR...]     (-d: dbfs only)

if [ "$1" = -d ]; then
	shift
else
	sh /bin/pjdfstest-run -n fat32-guest /fat "$@" > /fat/pjdfstest.log 2>&1
	# The FAT table, summary and failures (the per-file lines stay in /fat/pjdfstest.log).
	grep -v '\.t  *planned=' /fat/pjdfstest.log
	echo
fi
sh /bin/pjdfstest-run -n dbfs-guest /dbfs "$@"
