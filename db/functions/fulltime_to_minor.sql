-- An amount at a given scale in minor units of a currency, or NULL when it cannot be one.
--
-- The engine parses a stake before it knows the account, so in thousandths of the currency's
-- major unit (p_digits = 3, limits::minor_digits_max; "10.5" is 10500): the placement functions
-- convert it here once they have read the account's currency. NULL when the amount has more
-- decimals than the currency ("10.5" JPY, "1.005" EUR) or is above limits::amount_minor_max
-- minor units (bets.stake's bound): the placement then refuses it as invalid, storing nothing.
-- A scale below the currency's multiplies (tests pass hundredths, p_digits = 2). IMMUTABLE and a
-- single expression, so that it is inlined; the powers of ten are exact in double precision.

CREATE OR REPLACE FUNCTION fulltime_to_minor(p_amount bigint, p_digits integer, p_currency text)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN p_digits < fulltime_minor_digits(p_currency) THEN
            CASE WHEN p_amount <= 1000000000000000
                                  / (10 ^ (fulltime_minor_digits(p_currency) - p_digits))::bigint
                 THEN p_amount * (10 ^ (fulltime_minor_digits(p_currency) - p_digits))::bigint
            END
        WHEN p_amount % (10 ^ (p_digits - fulltime_minor_digits(p_currency)))::bigint = 0
         AND p_amount / (10 ^ (p_digits - fulltime_minor_digits(p_currency)))::bigint
             <= 1000000000000000 THEN
            p_amount / (10 ^ (p_digits - fulltime_minor_digits(p_currency)))::bigint
    END
$$;

COMMENT ON FUNCTION fulltime_to_minor(bigint, integer, text) IS
    'p_amount in units of 10^-p_digits of p_currency''s major unit, in its minor units '
    '(fulltime_minor_digits); NULL when that needs a fraction of a minor unit or exceeds '
    '10^15 minor units.';
