-- Market 1's settlement as the engine records it: the result's sequence applied (NULL until
-- then) and the bet it has settled through.
SELECT applied_seq, checkpoint_bet_id FROM settlement_progress WHERE market_id = 1
