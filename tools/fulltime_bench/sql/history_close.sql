-- Closes the history benchmark's first period at once (no grace): "closed" when it did.
SELECT outcome FROM fulltime_history_close(interval '0 s')
