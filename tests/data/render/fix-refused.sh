#!/bin/sh
# envdoctor plan: Pin torch to CUDA 12.1: torch 2.4.1+cu121 for Python 3.8
set -e
echo 'envdoctor: refused: driver 470.57.02 is too old for CUDA 12.1: it needs driver ≥ 525.60.13; update the driver or pin an older CUDA (--pin-cuda 11.8 runs on it)' >&2
exit 1
# 1. Remove the NVIDIA wheels of other CUDA families (none) (skipped: no NVIDIA wheels of a family other than cu12 are installed)
# 2. Remove packages that pin another torch: none (skipped: no installed package excludes torch 2.4.1+cu121)
# 3. Install torch==2.4.1+cu121 (why: the newest torch with a cu121 build for Python 3.8 (torch 2.4.1 supports Python 3.8–3.12))
/envs/seed/bin/python -m pip install torch==2.4.1+cu121 --index-url https://download.pytorch.org/whl/cu121
# 4. Check that torch imports as 2.4.1+cu121 (why: a fresh interpreter loads the new stack)
/envs/seed/bin/python -c 'import json, torch; print(json.dumps({"version": torch.__version__, "cuda": torch.version.cuda}))'
# note: torch 2.3.1+cu121 is already a cu121 build; `--torch 2.3.1` keeps its version
