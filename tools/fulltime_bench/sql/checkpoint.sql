-- A CHECKPOINT before a run, so that each starts with the same full-page-write cost.
CHECKPOINT
