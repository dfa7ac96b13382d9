"""Units of work run here or as jobs (SLURM, submitit's local executor): the launcher the reproduction, the parse
shards and the corpus preparation share. It imports nothing of syntrans, so any tool may use it."""
