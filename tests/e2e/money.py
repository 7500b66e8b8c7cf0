"""docs/design.md's money invariants, checked on a live database twice, independently: with this
file's own plain SQL (no engine code), and with the operator's tool, `fulltime audit --json`
(db/audit_statements.cpp, shared with the C++ pg tests). Both must pass; a bug in one cannot
hide behind the other. Every end-to-end scenario calls assert_money_invariants at its end."""

import json
import tempfile

import psycopg

from harness import engine_env, run_cli

# Every side of every transfer, signed: a side's balance is its credits minus its debits.
SIDES = """
    SELECT currency, credit_side AS side, credit_account_id AS account_id, amount
    FROM ledger_transfers
    UNION ALL
    SELECT currency, debit_side, debit_account_id, -amount FROM ledger_transfers
"""


def audit(conninfo, timeout=120):
    """Runs `fulltime audit --json` against conninfo; returns (exit status, parsed report or
    None, stderr)."""
    code, out, err = run_cli(["audit", "--json"],
                             engine_env({"FULLTIME_DATABASE_URL": conninfo},
                                        state_dir=tempfile.gettempdir()), timeout=timeout)
    try:
        report = json.loads(out) if out.strip() else None
    except ValueError:
        report = None
    return code, report, err


def audit_violations(conninfo):
    """The failing lines of `fulltime audit`, one string each."""
    code, report, err = audit(conninfo)
    if code not in (0, 1) or report is None:
        raise AssertionError(f"fulltime audit could not run (exit {code}): {err}")
    problems = ["audit %s: %s violations: %s" % (i["name"], i["violations"], i["sample"])
                for i in report["invariants"] if not i["passed"]]
    if (code == 0) != (not problems):
        problems.append(f"fulltime audit exited {code} with {len(problems)} failing lines")
    return problems


def money_violations(conninfo):
    """Returns a list of human-readable violations (empty when the books are right): this
    file's own checks, then the audit's."""
    return sql_violations(conninfo) + audit_violations(conninfo)


def sql_violations(conninfo, conn=None):
    """The invariants in plain SQL, written here independently of the engine's audit; on `conn`
    (an autocommit session on conninfo's database) when given, else on a connection of its own."""
    if conn is None:
        with psycopg.connect(conninfo, autocommit=True) as own:
            return sql_violations(conninfo, own)
    problems = []
    for currency, total in conn.execute(
            f"SELECT currency, sum(amount) FROM ({SIDES}) s GROUP BY currency "
            f"HAVING sum(amount) <> 0"):
        problems.append(f"ledger of {currency} sums to {total}, not 0")
    for row in conn.execute(f"""
            SELECT a.account_id, a.available, a.reserved, a.owed,
                   coalesce(sum(s.amount) FILTER (WHERE s.side = 'available'), 0),
                   coalesce(sum(s.amount) FILTER (WHERE s.side = 'reserved'), 0),
                   -coalesce(sum(s.amount) FILTER (WHERE s.side = 'owed'), 0)
            FROM accounts a LEFT JOIN ({SIDES}) s ON s.account_id = a.account_id
            GROUP BY a.account_id, a.available, a.reserved, a.owed
            HAVING a.available <> coalesce(sum(s.amount) FILTER (WHERE s.side = 'available'), 0)
                OR a.reserved <> coalesce(sum(s.amount) FILTER (WHERE s.side = 'reserved'), 0)
                OR a.owed <> -coalesce(sum(s.amount) FILTER (WHERE s.side = 'owed'), 0)
                OR a.available < 0 OR a.reserved < 0 OR a.owed < 0"""):
        problems.append("account %s: balance available=%s reserved=%s owed=%s, "
                        "ledger %s / %s / %s" % row)
    for bet_id, n in conn.execute("""
            SELECT b.bet_id, count(t.transfer_id)
            FROM bets b LEFT JOIN ledger_transfers t
              ON t.entry_key = 'bet:' || b.bet_id || ':reserve' AND t.amount = b.stake
            GROUP BY b.bet_id HAVING count(t.transfer_id) <> 1"""):
        problems.append(f"bet {bet_id} has {n} reservations, not 1")
    # Per bet: at most one effect in force, and its ledger legs net to what that state
    # means (open: the stake held in reserved; settled or cancelled: nothing reserved and
    # exactly the payout received), so every reversal undid exactly its effect.
    for bet_id, n in conn.execute("""
            SELECT e.bet_id, count(*) FROM bet_settlements e
            WHERE NOT e.reversal AND NOT EXISTS (
                SELECT 1 FROM bet_settlements r
                WHERE r.bet_id = e.bet_id AND r.version = e.version AND r.reversal)
            GROUP BY e.bet_id HAVING count(*) > 1"""):
        problems.append(f"bet {bet_id} has {n} effects in force")
    for row in conn.execute("""
            SELECT bet_id, lr, wr, la, wa FROM (
                SELECT b.bet_id,
                       coalesce(sum(s.amount) FILTER (WHERE s.side = 'reserved'), 0) lr,
                       coalesce(sum(s.amount) FILTER (WHERE s.side = 'available'), 0) la,
                       CASE WHEN f.payout IS NULL THEN b.stake ELSE 0 END wr,
                       coalesce(f.payout, 0) - b.stake wa
                FROM bets b
                LEFT JOIN LATERAL (
                    SELECT e.payout FROM bet_settlements e
                    WHERE e.bet_id = b.bet_id AND NOT e.reversal AND NOT EXISTS (
                        SELECT 1 FROM bet_settlements r
                        WHERE r.bet_id = e.bet_id AND r.version = e.version
                          AND r.reversal)) f ON true
                LEFT JOIN (
                    SELECT credit_side AS side, credit_account_id AS account_id, bet_id,
                           amount FROM ledger_transfers WHERE bet_id IS NOT NULL
                    UNION ALL
                    SELECT debit_side, debit_account_id, bet_id, -amount
                    FROM ledger_transfers WHERE bet_id IS NOT NULL
                ) s ON s.bet_id = b.bet_id AND s.account_id = b.account_id
                GROUP BY b.bet_id, b.stake, f.payout) y
            WHERE lr <> wr OR la <> wa LIMIT 5"""):
        problems.append("bet %s: reserved %s (want %s), available %s (want %s)" % row)
    for key, n in conn.execute("""
            SELECT account_id || '/' || idempotency_key, count(*) FROM bets
            GROUP BY account_id, idempotency_key HAVING count(*) > 1"""):
        problems.append(f"idempotency key {key} made {n} bets")
    return problems


def assert_money_invariants(test, conninfo):
    problems = money_violations(conninfo)
    test.assertEqual(problems, [], "money invariants broken:\n" + "\n".join(problems))
