-- Incidents as the reconciler and the reservation sweeper report them.
--
-- An incident is one problem, seen for the first time at first_seen and again at every later
-- run that still finds it (last_seen). A run that finds the same problem again updates that
-- incident instead of adding one, so a drifted balance row is exactly one incident however many
-- runs see it; the problem's identity is (kind, subject), where subject names the account and
-- side, the currency, or the bet. Nothing here corrects money: an incident is closed
-- (resolved_at) by the run that no longer finds the problem, or by an operator's decision.
--
-- Kinds:
--   balance_drift        accounts.<side> differs from the ledger's sum for that side
--                        (expected = the ledger, actual = the row); side available, reserved
--                        or owed
--   currency_mismatch    a transfer whose currency differs from its account's
--   currency_imbalance   a currency's transfers do not sum to zero (expected 0, actual = sum)
--   overdue_reservation  an open bet (its reservation) past its market's settlement deadline
--                        plus the grace period (expected = the deadline in epoch seconds)

ALTER TABLE incidents DROP CONSTRAINT incidents_kind_check;
ALTER TABLE incidents ADD CONSTRAINT incidents_kind_check
    CHECK (kind IN ('balance_drift', 'currency_mismatch', 'currency_imbalance',
                    'overdue_reservation'));
ALTER TABLE incidents DROP CONSTRAINT incidents_side_check;
ALTER TABLE incidents ADD CONSTRAINT incidents_side_check
    CHECK (side IN ('available', 'reserved', 'owed'));

ALTER TABLE incidents RENAME COLUMN detected_at TO first_seen;
ALTER INDEX incidents_detected_idx RENAME TO incidents_first_seen_idx;
ALTER TABLE incidents
    ADD COLUMN subject     text        CHECK (octet_length(subject) BETWEEN 1 AND 200),
    ADD COLUMN market_id   bigint,
    ADD COLUMN bet_id      bigint,
    ADD COLUMN last_seen   timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN runs        integer     NOT NULL DEFAULT 1 CHECK (runs >= 1),
    ADD COLUMN resolved_at timestamptz,
    ADD COLUMN resolution  text        CHECK (octet_length(resolution) <= 500),
    ADD CONSTRAINT incidents_resolution_when_resolved
        CHECK ((resolved_at IS NULL) = (resolution IS NULL));
UPDATE incidents SET subject = 'incident:' || incident_id;
ALTER TABLE incidents ALTER COLUMN subject SET NOT NULL;

-- One open incident per problem: a run that sees it again updates it (ON CONFLICT ... DO UPDATE).
CREATE UNIQUE INDEX incidents_open_subject_idx ON incidents (kind, subject)
    WHERE resolved_at IS NULL;
CREATE INDEX incidents_market_idx ON incidents (market_id) WHERE market_id IS NOT NULL;

COMMENT ON TABLE incidents IS
    'Problems the reconciler and the reservation sweeper found: one row per problem (kind, '
    'subject) while it lasts, first_seen / last_seen / runs; closed with resolved_at and a '
    'resolution when a later run no longer finds it or an operator acts. Never corrects money.';
COMMENT ON COLUMN incidents.subject IS
    'What the incident is about, stable across runs: account:<id>:<side>, currency:<code>, '
    'transfer:<id>, bet:<id>.';
COMMENT ON COLUMN incidents.expected IS
    'balance_drift: the ledger''s sum; currency_imbalance: 0; overdue_reservation: the deadline '
    '(epoch seconds).';
COMMENT ON COLUMN incidents.actual IS
    'balance_drift: the balance row; currency_imbalance: the currency''s sum; '
    'overdue_reservation: the reserved stake.';
