"""Generation that also reports the parses a model's DBSA and LISA heads predict: the recording generators
(:mod:`.recording`), fairseq-generate's SH-/TH- lines and word-level UAS (:mod:`.syntax_lines`), and the
end-of-split hook that prints the summary (:mod:`.end_of_split`)."""
