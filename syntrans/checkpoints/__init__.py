"""fairseq checkpoints: loading them safely, averaging them, and loading a trained model with its task.

:mod:`.safety`: the allow-list of the classes fairseq checkpoints hold, for torch's weights-only loader
(applied when ``syntrans`` is imported with fairseq). :mod:`.average`: the element-wise mean of several
checkpoints (``syntrans-average-checkpoints``). :mod:`.loading`: :func:`~syntrans.checkpoints.loading.load_checkpoint`,
a checkpoint's model, config and task on a data-bin folder (translation, figures). :mod:`.load_errors`: a checkpoint
file that cannot be read names itself and the checkpoints beside it, where syntrans reads one (fairseq's own loader is
left as it is).
"""
