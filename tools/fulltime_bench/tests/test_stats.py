"""stats: the two percentile conventions, the medians, CPU accounting."""

import unittest

from fulltime_bench import stats


class PercentileTest(unittest.TestCase):
    def test_of_range_picks_index_of_q_times_n_minus_one(self):
        values = list(range(1, 101))  # 1..100
        self.assertEqual(stats.percentile_of_range(values, 0.5), 50)   # index int(49.5) = 49
        self.assertEqual(stats.percentile_of_range(values, 0.99), 99)  # index int(98.01) = 98
        self.assertEqual(stats.percentile_of_range(values, 1.0), 100)

    def test_of_range_of_nothing_is_the_empty_value(self):
        self.assertEqual(stats.percentile_of_range([], 0.99), 0.0)
        self.assertIsNone(stats.percentile_of_range([], 0.99, empty=None))

    def test_of_count_picks_index_of_q_times_n_and_sorts(self):
        values = list(range(100, 0, -1))  # unsorted: 100..1
        self.assertEqual(stats.percentile_of_count(values, 0.5), 51)   # index 50
        self.assertEqual(stats.percentile_of_count(values, 0.99), 100)  # index 99
        self.assertEqual(stats.percentile_of_count(values, 1.0), 100)   # capped at the last

    def test_of_count_of_nothing_is_none(self):
        self.assertIsNone(stats.percentile_of_count([], 0.5))

    def test_the_conventions_differ_where_they_always_did(self):
        values = [1, 2, 3, 4]
        self.assertEqual(stats.percentile_of_range(values, 0.5), 2)
        self.assertEqual(stats.percentile_of_count(values, 0.5), 3)


class MedianTest(unittest.TestCase):
    def test_median_averages_the_middle_two_and_skips_none(self):
        self.assertEqual(stats.median([4, None, 1, 3, 2]), 2.5)
        self.assertIsNone(stats.median([None]))

    def test_lower_median_takes_the_lower_middle(self):
        self.assertEqual(stats.lower_median([40, 10, 30, 20]), 20)
        self.assertEqual(stats.lower_median([3, 1, 2]), 2)
        self.assertEqual(stats.lower_median([7]), 7)


class CpuTest(unittest.TestCase):
    def test_cores_and_microseconds_per_operation(self):
        self.assertEqual(stats.cores_used(200, 2.0, 100), 1.0)
        self.assertEqual(stats.us_per_op(100, 1000, 100), 1000.0)
        self.assertEqual(stats.us_per_op(100, 0, 100), 0.0)

    def test_count_by_keeps_first_seen_order(self):
        self.assertEqual(list(stats.count_by(["b", "a", "b"]).items()), [("b", 2), ("a", 1)])


if __name__ == "__main__":
    unittest.main()
