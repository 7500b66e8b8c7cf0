"""Splits the WAL between two LSNs of a local PostgreSQL cluster by record type and by
relation, per unit of work (e.g. per settled bet):

  scripts/wal-split DATABASE_URL PGDATA START_LSN END_LSN [UNITS]

DATABASE_URL names the database whose relations the records touch (their relfilenodes are
resolved to names there); PGDATA is the cluster's data directory, whose pg_wal must still hold
the segments from START_LSN to END_LSN (read with pg_waldump, so run it on the database's own
machine, as a user that can read pg_wal). UNITS (default 1) divides every byte figure.

Prints:
  1. pg_waldump --stats=record: records, record bytes and full-page-image (FPI) bytes per
     resource manager and record type;
  2. per relation (relation or index name, fork), from pg_waldump's records: the records whose
     first block reference is in that relation, their bytes without FPIs ("rec") and the FPI
     bytes they carry (tot - rec), and both per unit; records without a block reference
     (commits, running xacts, ...) are summed under "(no relation: <rmgr>)"."""

import os
import re
import subprocess
import sys

from . import common, db

LENGTHS = re.compile(r"len \(rec/tot\): *([0-9]+)/ *([0-9]+)")
BLOCK = re.compile(r"blkref #[0-9]+: rel [0-9]+/([0-9]+/[0-9]+)( fork ([a-z]+))?")
HEADER = ("relation", "records", "rec bytes", "FPI bytes", "rec/unit", "FPI/unit", "total/unit")


def relation_of(line, names):
    """The relation a pg_waldump record line's first block reference is in ("name (fork)"), or
    "(no relation: RMGR)"."""
    m = BLOCK.search(line)
    if not m:
        return f"(no relation: {line.split()[1]})"
    node = m.group(1)
    fork = f" ({m.group(3)})" if m.group(3) else ""
    return names.get(node, f"relfilenode {node}") + fork


def by_relation(lines, names):
    """{relation: [records, record bytes, FPI bytes]} of pg_waldump's record lines."""
    out = {}
    for line in lines:
        if not line.startswith("rmgr:"):
            continue
        m = LENGTHS.search(line)
        if not m:
            continue
        rec, tot = int(m.group(1)), int(m.group(2))
        n = out.setdefault(relation_of(line, names), [0, 0, 0])
        n[0] += 1
        n[1] += rec
        n[2] += tot - rec
    return out


def table(split, units):
    """The per-relation table's lines: the header, the relations by total bytes (largest
    first), the total."""
    def row(name, n, rec, fpi):
        return (f"  {name:<46} {n:9d} {rec:13d} {fpi:13d} {rec / units:10.1f} {fpi / units:10.1f} "
                f"{(rec + fpi) / units:10.1f}")

    lines = ["  {:<46} {:>9} {:>13} {:>13} {:>10} {:>10} {:>10}".format(*HEADER)]
    rows = [(rec + fpi, row(k, n, rec, fpi)) for k, (n, rec, fpi) in split.items()]
    lines += [text for _, text in sorted(rows, reverse=True)]
    total = [sum(v[i] for v in split.values()) for i in range(3)]
    return lines + [row("total", *total)]


def relation_names(url):
    """{"DATABASE/FILENODE": relation name} of the database's relations."""
    return {f"{d}/{f}": name for d, f, name in db.rows(url, "wal_split_relations")}


def split(url, pgdata, start, end, units=1):
    """Prints the split; returns pg_waldump's status."""
    waldump = [os.path.join(common.PG_BIN, "pg_waldump"), "-p", os.path.join(pgdata, "pg_wal"),
               "-s", start, "-e", end]
    total = db.row(url, "wal_between", start=start, end=end)[0]
    print(f"WAL from {start} to {end}: {total} bytes, per unit (/{units}) below")
    print()
    print("pg_waldump --stats=record:")
    stats = subprocess.run(waldump + ["--stats=record"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    for line in stats.stdout.splitlines():
        print("  " + line)
    if stats.returncode:
        return stats.returncode
    print()
    names = relation_names(url)
    print("per relation (first block reference of each record; bytes per unit):")
    records = subprocess.run(waldump, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
    for line in table(by_relation(records.stdout.splitlines(), names), units):
        print(line)
    return records.returncode


def main(argv=None):
    common.line_buffered()
    p = common.Parser("scripts/wal-split", __doc__)
    p.add_argument("database_url", metavar="DATABASE_URL")
    p.add_argument("pgdata", metavar="PGDATA")
    p.add_argument("start", metavar="START_LSN")
    p.add_argument("end", metavar="END_LSN")
    p.add_argument("units", metavar="UNITS", nargs="?", default="1")
    a = p.parse_args(argv)
    if not re.fullmatch(r"[1-9][0-9]*", a.units):
        common.die(f"UNITS must be a positive integer, got '{a.units}'")
    return split(a.database_url, a.pgdata, a.start, a.end, int(a.units))


if __name__ == "__main__":
    sys.exit(main())
