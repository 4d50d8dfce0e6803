#!/bin/sh
# envdoctor plan: Pin torch to CUDA 12.1: torch 2.4.1+cu121 for Python 3.8
# instead: envdoctor fix --pin-cuda 11.8  (torch 2.4.1+cu118)
# instead: envdoctor fix --pin-cuda 11.7  (torch 2.0.1+cu117)
# instead: envdoctor fix --pin-cuda 11.6  (torch 1.13.1+cu116)
echo 'envdoctor: refused: driver 470.57.02 is too old for CUDA 12.1: it needs driver ≥ 525.60.13; update the driver or pin an older CUDA (--pin-cuda 11.8 runs on it)' >&2
exit 1
# note: torch 2.3.1+cu121 is already a cu121 build; `--torch 2.3.1` keeps its version
