-- Whether market 100's result is applied in full.
SELECT 1 FROM settlement_progress WHERE market_id = 100 AND applied_seq >= 1
