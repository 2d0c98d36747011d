#!/usr/bin/env bash
# Probe helper (not part of the suite): the WAL between two LSNs of a cluster, per resource manager,
# record type and relation (the relation of the record's first block reference), with the share of
# full-page images. Run it on a cluster of your own (other databases' WAL would be mixed in).
#   bench/src/probe/wal-by-relation.sh <pg_wal dir> <start LSN> <end LSN> <database URL> [jobs]
set -euo pipefail
WALDIR=$1 START=$2 END=$3 URL=$4 JOBS=${5:-1}
BIN=${PORTER_PG_BIN:-/usr/lib/postgresql/15/bin}
names=$(mktemp) rels=$(mktemp)
psql -qAt -F ' ' "$URL" -c "SELECT pg_relation_filenode(oid), relname FROM pg_class WHERE pg_relation_filenode(oid) IS NOT NULL" > "$names"
printf "%-8s %-16s %-44s %9s %9s %6s %8s\n" rmgr type relation records B/job FPIs share
"$BIN/pg_waldump" -p "$WALDIR" -s "$START" -e "$END" 2>/dev/null | awk -v jobs="$JOBS" -v names="$names" -v rels="$rels" '
  BEGIN { while ((getline line < names) > 0) { split(line, a, " "); rel[a[1]] = a[2] } }
  {
    rmgr = $2; sub(/,$/, "", rmgr)
    match($0, /len \(rec\/tot\): *[0-9]+\/ *[0-9]+/); split(substr($0, RSTART, RLENGTH), l, "/"); tot = l[3] + 0
    match($0, /desc: [A-Z_+0-9]+/); type = substr($0, RSTART + 6, RLENGTH - 6)
    r = "-"
    if (match($0, /blkref #0: rel [0-9]+\/[0-9]+\/[0-9]+/)) { split(substr($0, RSTART, RLENGTH), p, "/"); r = (p[3] in rel) ? rel[p[3]] : p[3] }
    fpw = ($0 ~ /FPW/) ? 1 : 0
    k = rmgr " " type " " r; bytes[k] += tot; n[k]++; fp[k] += fpw; all += tot
    rb[r] += tot; rfp[r] += fpw
  }
  END {
    for (k in bytes) { split(k, q, " "); printf "%-8s %-16s %-44s %9d %9.1f %6d %7.1f%%\n", q[1], q[2], q[3], n[k], bytes[k] / jobs, fp[k], 100 * bytes[k] / all }
    for (r in rb) printf "  %-44s %9.1f B/job %6d FPIs %6.1f%%\n", r, rb[r] / jobs, rfp[r], 100 * rb[r] / all > rels
    printf "total %.1f B/job\n", all / jobs > (rels ".total")
  }' | sort -k5 -n -r
printf "\nper relation:\n"
sort -k2 -n -r "$rels"
cat "$rels.total"
rm -f "$names" "$rels" "$rels.total"
