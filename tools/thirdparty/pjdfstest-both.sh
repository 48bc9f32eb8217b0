# pjdfstest-both: the in-guest half of `make pjdfstest-guest` (installed as
# /bin/pjdfstest-both). Runs pjdfstest-run on /fat, then on /dbfs, over the same test
# directories (default: all), prints each file system's per-directory table, its summary line
# and its unexpected results, and exits with status 0 only when both runs had none.
#
# vfat cannot pass what needs owners, permission bits, links, symlinks, FIFOs or sockets: the
# FAT run reads what it may fail from /etc/pjdfstest-fat32.expect
# (tools/thirdparty/pjdfstest-fat32-expect.txt), which names each skipped file and each expected
# failure with its reason; an unlisted failure, or a listed one that passes, fails the run.
#
#   sh /bin/pjdfstest-both [-d|-f] [TESTDIR...]     (-d: dbfs only, -f: FAT only)
#
# The FAT run's whole log (per-file lines and the expected failures, XFAIL) stays in
# /fat/pjdfstest.log; on the host: `mcopy -i build/pjd-fat.img ::pjdfstest.log -`.

fat=1 dbfs=1
case "$1" in
-d) fat= && shift ;;
-f) dbfs= && shift ;;
esac
status=0
if [ -n "$fat" ]; then
	sh /bin/pjdfstest-run -n fat32-guest -x /etc/pjdfstest-fat32.expect /fat "$@" \
		> /fat/pjdfstest.log 2>&1 || status=1
	# The FAT table, summary and unexpected results (per-file and XFAIL lines stay in the log).
	grep -v -e '\.t  *planned=' -e '^XFAIL ' /fat/pjdfstest.log
	echo
fi
if [ -n "$dbfs" ]; then
	sh /bin/pjdfstest-run -n dbfs-guest /dbfs "$@" || status=1
fi
exit $status
