#!/bin/sh
# envdoctor plan: Keep one NVIDIA wheel family (installed: cu12; torch 2.3.1+cu121)
# 1. Remove NVIDIA wheel families nothing needs (skipped: only cu12 NVIDIA wheels are installed: nothing is mixed)
# 2. Check that torch still imports (why: a fresh interpreter loads the remaining stack)
/envs/seed/bin/python -c 'import json, torch; print(json.dumps({"version": torch.__version__, "cuda": torch.version.cuda}))'
