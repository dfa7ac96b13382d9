"""The console commands (``syntrans-*``). Every command imports this package first: fairseq's configuration through
hydra warns on every call that its ``hydra.experimental`` API, its missing ``version_base`` and its schema matching of
'config' are deprecated (fairseq's code, not the user's); our commands do not show those warnings."""
import warnings

warnings.filterwarnings("ignore", category=UserWarning, module=r"hydra\.")
# hydra points this one at the caller's frame ("sys:1"), so it is matched by its text
warnings.filterwarnings("ignore", category=UserWarning, message=r"\s*'config' is validated against ConfigStore schema")
