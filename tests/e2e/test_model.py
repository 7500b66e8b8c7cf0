"""The seeded model test (tests/e2e/model.py) for a few seeds, as CI runs it, and two fixed
scenarios of docs/design.md's refusal rules. FULLTIME_MODEL_SEEDS ("1 2 3") and FULLTIME_MODEL_OPS
(150) choose the seeds; `scripts/soak --seeds N` runs many more. CTest runs each of CI's seeds as
a test of its own (ModelSeedsTest with one seed; tests/CMakeLists.txt), so that they run side by
side and each has the whole per-test timeout, and ModelRulesTest as one more."""

import os
import unittest

from model import Mismatch, Run, run_seed


class ModelSeedsTest(unittest.TestCase):
    def test_seeds(self):
        seeds = [int(s) for s in os.environ.get("FULLTIME_MODEL_SEEDS", "1 2 3").split()]
        ops = int(os.environ.get("FULLTIME_MODEL_OPS", "150"))
        for seed in seeds:
            with self.subTest(seed=seed):
                summary = run_seed(seed, ops)
                print(f"seed {seed}: {summary}", flush=True)


class ModelRulesTest(unittest.TestCase):
    def test_the_model_check_finds_a_corrupted_balance(self):
        # The comparison must be able to fail: one cent added by hand to a balance row.
        run = Run(seed=11, ops=0)
        run.start()
        try:
            run.op_account()
            run.op_deposit()
            run.check()
            run.sql("UPDATE accounts SET available = available + 1 WHERE account_id = 1")
            with self.assertRaises(Mismatch):
                run.check()
        finally:
            run.stop()

    def test_refusals_stay_refused_and_move_nothing(self):
        run = Run(seed=12, ops=0)
        run.start()
        try:
            run.op_account()
            run.op_market()
            market = next(iter(run.model.markets.values()))
            sel, odds = next(iter(market.selections.items()))
            req = {"type": "place", "id": "r1", "idempotency_key": "too-big", "selection_id": sel,
                   "stake": "5.00", "odds": f"{odds // 10000}.{odds % 10000:04d}"}
            reply = run.place(1, [req])[0]
            self.assertEqual((reply["type"], reply["code"], reply["replayed"]),
                             ("rejected", "insufficient_funds", False), reply)
            # A withdrawal above the balance is refused and writes nothing.
            transfers = run.sql("SELECT count(*) FROM ledger_transfers")[0][0]
            status, body = run.transfer("withdrawal", 1, 100, "w1")
            self.assertEqual((status, body.get("code")), (409, "insufficient_funds"), body)
            self.assertEqual(run.sql("SELECT count(*) FROM ledger_transfers")[0][0], transfers)
            self.assertEqual(run.sql("SELECT available, reserved, owed FROM accounts")[0], (0, 0, 0))
            # After a deposit the stake is covered, but the key's refusal is its answer for good.
            status, body = run.transfer("deposit", 1, 10000, "d1")
            self.assertIn(status, (200, 201), body)
            again = run.place(1, [{**req, "id": "r2"}])[0]
            self.assertEqual((again["type"], again["code"], again["replayed"]),
                             ("rejected", "insufficient_funds", True), again)
            self.assertEqual(run.sql("SELECT count(*) FROM bets")[0][0], 0)
            self.assertEqual(run.sql("SELECT available, reserved FROM accounts")[0], (10000, 0))
            # The refused withdrawal wrote nothing, so its key is free: now it goes through.
            status, body = run.transfer("withdrawal", 1, 100, "w1")
            self.assertIn(status, (200, 201), body)
            self.assertEqual(run.sql("SELECT available FROM accounts")[0][0], 9900)
            run.model.net[1] = 9900
            run.check(audit=True)
        finally:
            run.stop()


if __name__ == "__main__":
    unittest.main()
