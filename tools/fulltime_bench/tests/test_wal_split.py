"""wal_split: pg_waldump's record lines summed by relation."""

import unittest

from fulltime_bench import wal_split

NAMES = {"16384/16400": "bets", "16384/16410": "bets_pkey"}
LINES = [
    "rmgr: Heap        len (rec/tot):     79/    79, tx: 740, lsn: 0/0300A0D8, prev 0/0300A0A0, "
    "desc: INSERT off 5, blkref #0: rel 1663/16384/16400 blk 0",
    "rmgr: Btree       len (rec/tot):     64/  8256, tx: 740, lsn: 0/0300A128, prev 0/0300A0D8, "
    "desc: INSERT_LEAF off 2, blkref #0: rel 1663/16384/16410 blk 1 FPW",
    "rmgr: Heap2       len (rec/tot):     59/    59, tx: 0, lsn: 0/0300C178, prev 0/0300A128, "
    "desc: VISIBLE cutoff xid 739, blkref #0: rel 1663/16384/16400 fork vm blk 0",
    "rmgr: Transaction len (rec/tot):     34/    34, tx: 740, lsn: 0/0300C1B8, prev 0/0300C178, "
    "desc: COMMIT 2026-12-01 10:00:00.000000 UTC",
    "rmgr: Heap        len (rec/tot):     79/    79, tx: 741, lsn: 0/0300C1E0, prev 0/0300C1B8, "
    "desc: INSERT off 6, blkref #0: rel 1663/16384/99999 blk 0",
    "pg_waldump: error: something else",
]


class SplitTest(unittest.TestCase):
    def test_records_by_their_first_block_reference(self):
        self.assertEqual(wal_split.by_relation(LINES, NAMES), {
            "bets": [1, 79, 0], "bets_pkey": [1, 64, 8192], "bets (vm)": [1, 59, 0],
            "(no relation: Transaction)": [1, 34, 0], "relfilenode 16384/99999": [1, 79, 0]})

    def test_the_table_is_largest_first_with_a_total(self):
        lines = wal_split.table(wal_split.by_relation(LINES, NAMES), 2)
        self.assertTrue(lines[0].startswith("  relation"))
        self.assertTrue(lines[1].startswith("  bets_pkey "))
        self.assertTrue(lines[-1].startswith("  total "))
        self.assertIn(" 5 ", lines[-1])
        self.assertTrue(lines[-1].endswith(f"{(79 * 2 + 64 + 59 + 34 + 8192) / 2:10.1f}"))


if __name__ == "__main__":
    unittest.main()
