# expect: run.exception environment-variable-unset confirmed
"""A training script that finds its data through a variable the job script exports, started by hand in a
shell that never exported it: the message is only the variable's name."""
import os
from pathlib import Path

data_root = Path(os.environ["ENVDOCTOR_CORPUS_DATA_ROOT"])
print(sorted(data_root.iterdir()))
