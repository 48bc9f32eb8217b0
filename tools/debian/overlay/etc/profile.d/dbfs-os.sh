# dbfs-os: our programs (benchmarks, test programs, the static third-party builds) come after
# Debian's own on PATH, so `fio` and `sqlite3` are Debian's and `seqwrite` is ours.
case ":$PATH:" in
*:/opt/dbfs-os/bin:*) ;;
*) PATH=$PATH:/opt/dbfs-os/bin ;;
esac
