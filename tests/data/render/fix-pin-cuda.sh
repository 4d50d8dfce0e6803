#!/bin/sh
# envdoctor plan: Pin torch to CUDA 11.6: torch 1.13.1+cu116 for Python 3.8
set -e
# 1. Remove the NVIDIA wheels of other CUDA families (cu12) (why: torch 1.13.1+cu116 uses cu11 libraries; cu12 wheels beside them get mixed into one process)
/envs/seed/bin/python -m pip uninstall -y nvidia-cublas-cu12 nvidia-cuda-cupti-cu12 nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12 nvidia-cudnn-cu12 nvidia-cufft-cu12 nvidia-curand-cu12 nvidia-cusolver-cu12 nvidia-cusparse-cu12 nvidia-nccl-cu12 nvidia-nvjitlink-cu12 nvidia-nvtx-cu12
# 2. Remove the packages that cannot stay beside torch 1.13.1+cu116: none (skipped: no installed package excludes torch 1.13.1+cu116)
# 3. Install torch==1.13.1+cu116 torchvision==0.14.1+cu116 torchaudio==0.13.1+cu116 (why: the newest torch with a cu116 build for Python 3.8 (torch 1.13.1 supports Python 3.7–3.10))
/envs/seed/bin/python -m pip install torch==1.13.1+cu116 torchvision==0.14.1+cu116 torchaudio==0.13.1+cu116 --extra-index-url https://download.pytorch.org/whl/cu116
# 4. Check that torch imports as 1.13.1+cu116 (why: a fresh interpreter loads the new stack)
/envs/seed/bin/python -c 'import json, torch; print(json.dumps({"version": torch.__version__, "cuda": torch.version.cuda}))'
# 5. Run the probe ladder: numpy, torch, CUDA, gymnasium, stable_baselines3, sb3_contrib, MaskablePPO construct, learn, save/load (why: every stage that passed before the fix must pass after it; --apply runs it before and after, and rolls back if one does not)
envdoctor check --python /envs/seed/bin/python --only probe --no-save
# note: driver unknown (no NVIDIA driver (no /proc/driver/nvidia)): CUDA 11.6 wheels need driver ≥ 450.80.02; not checked
