-- Currencies with their ISO 4217 minor units (docs/schema.md, "Money"): an amount is still
-- bigint minor units, but a minor unit is now the currency's own (JPY has none, so "1000" JPY is
-- 1000; KWD has three decimals, so "10.500" KWD is 10500) where it was a hundredth for every
-- currency. Only the text boundary changes, in the engine; the stored amounts of a currency with
-- two decimals mean what they meant.
--
-- Amounts of a currency without two decimals would not: 1000 stored for "10.00" JPY would read
-- as 1000 yen. Such accounts are refused here rather than reinterpreted; none existed when
-- this release was written. The codes are fulltime_minor_digits.sql's (a migration cannot call a
-- function file, which is applied after every migration).
DO $$
DECLARE
    v_found text;
BEGIN
    SELECT string_agg(DISTINCT a.currency, ', ' ORDER BY a.currency) INTO v_found
    FROM accounts a
    WHERE a.currency IN ('BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF',
                         'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF', 'BHD', 'IQD', 'JOD',
                         'KWD', 'LYD', 'OMR', 'TND', 'CLF', 'UYW');
    IF v_found IS NOT NULL THEN
        RAISE EXCEPTION 'accounts hold % amounts stored as hundredths; from this release a '
                        'minor unit is the currency''s own (ISO 4217), so they would change '
                        'value: convert or remove them with the previous release first', v_found
            USING ERRCODE = '55000';
    END IF;
END;
$$;

-- The placement functions take the stake in thousandths, with its scale as a new argument
-- (p_stake_digits), and convert it with the account's currency. The old signatures go here and
-- the function files create the new ones: an engine of the previous release still running
-- calls a function that no longer exists, an error, instead of one that would read its minor
-- units as thousandths.
DROP FUNCTION IF EXISTS fulltime_place(bigint, text, text, bigint, bigint, bigint, text, integer,
                                       integer);
DROP FUNCTION IF EXISTS fulltime_place_group(bigint[], text[], text[], bigint[], bigint[],
                                             bigint[], text[], integer, integer);

-- A stake with more decimals than its account's currency: answered as invalid_request, and,
-- like every invalid request, stored nowhere (the key is not claimed).
INSERT INTO fulltime_codes (domain, code, description) VALUES
    ('place_outcome', 'invalid',
     'the stake has more decimals than the account''s currency allows; nothing was stored');
