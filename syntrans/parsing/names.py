"""The parsers' names (no import of stanza: command lines list them in their ``--help``)."""

TRIVIAL_PARSERS = ("right-branching", "left-branching", "flat")  # the trivial parsers (syntrans.parsing.trivial)
PARSERS = ("stanza",) + TRIVIAL_PARSERS
AUTO_PARSERS = ("auto",) + PARSERS  # "auto": the command picks (syntrans-prepare, syntrans-translate say how)
#: syntrans-prepare also takes another parser's output, imported (syntrans.parsing.imported)
PREPARE_PARSERS = AUTO_PARSERS + ("imported",)
