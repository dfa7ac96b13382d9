"""The two sides of a translation, in the two vocabularies the code uses, and the one mapping between them.

* A text side is ``source`` or ``target``: the sentence translated and its translation (parse views, sidecars,
  batch features, parses printed or plotted).
* A model side is ``encoder`` or ``decoder``: the half of the model that reads that text (mechanisms, layers,
  reports).
* ``src``/``tgt`` are the short forms of the text sides in feature and flag names (``src_parent_first``, ``--nsd-src-…``).

Standard library only (a helper of every floor)."""

#: the text sides, in order
TEXT_SIDES = ("source", "target")
#: the model sides, in order
MODEL_SIDES = ("encoder", "decoder")
#: text side → the model side that reads it
MODEL_SIDE = dict(zip(TEXT_SIDES, MODEL_SIDES))

__all__ = ["MODEL_SIDE", "MODEL_SIDES", "TEXT_SIDES"]
