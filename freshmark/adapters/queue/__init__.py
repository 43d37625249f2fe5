"""Redis: the job queue, the fan-out record, execution locks and every key."""
