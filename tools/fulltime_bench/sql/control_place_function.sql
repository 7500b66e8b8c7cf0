-- The settlement control's placement (control_place.pgbench): fulltime_place, a lock timeout
-- retried with the same key as the engine does (pgbench would abort the client on the error
-- instead).
CREATE FUNCTION ctl_place(p_account bigint, p_key text, p_selection bigint, p_hint integer)
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        BEGIN
            RETURN (SELECT outcome FROM fulltime_place(p_account, p_key, 'fp', p_selection, 100,
                                                       2, 20000, 'any', 50, p_hint));
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
END $$;
