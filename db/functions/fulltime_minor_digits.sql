-- A currency's minor unit, in SQL: the decimal places of its ISO 4217 exponent.
--
-- The same table as money::minor_digits (core/money.cpp), which formats and parses amounts;
-- tests/db/currency_pgtest.cpp proves the two agree. The placement functions need it in SQL
-- because a stake is parsed before its account, and so its currency, is known: they convert the
-- stake to minor units with it (fulltime_to_minor). IMMUTABLE and a single expression, so that
-- the planner inlines it into the statements that call it (no function call per row).

CREATE OR REPLACE FUNCTION fulltime_minor_digits(p_currency text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN p_currency IN ('BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG',
                            'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF') THEN 0
        WHEN p_currency IN ('BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND') THEN 3
        WHEN p_currency IN ('CLF', 'UYW') THEN 4
        ELSE 2
    END
$$;

COMMENT ON FUNCTION fulltime_minor_digits(text) IS
    'Decimal places of a currency''s minor unit (ISO 4217): 0 for JPY and the other '
    'zero-decimal currencies, 3 for KWD and the other three-decimal ones, 4 for CLF and UYW '
    '(which accounts cannot hold), 2 for every other code. As money::minor_digits.';
