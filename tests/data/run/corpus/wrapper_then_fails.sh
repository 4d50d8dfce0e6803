# expect: run.exception weights-only confirmed
# A wrapper that checks the interpreter first, then runs the training script that fails.
"$PYTHON" -c "import sys; print(sys.version)"
cat > resume.py <<'PY'
import torch
class Cfg: pass
torch.save({"cfg": Cfg()}, "last.pt")
torch.load("last.pt")
PY
exec "$PYTHON" resume.py
