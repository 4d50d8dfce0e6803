"""Time the model-safety paths: `inspect` of 10 MB hostile files, `sanitize` of a 100 MB genuine model.

Targets (docs/model-safety.md): inspect of a 10 MB hostile file within 1 s, sanitize of a 100 MB model
within 3 s, both as whole `python -m envdoctor` processes on this machine. The hostile files put their
10 MB where the judges must read it: a `data` entry of no-op opcodes, one nested 2.5 million lists deep,
and a `policy.pth` whose data.pkl is 10 MB of nesting. The 100 MB model is a real PPO saved by SB3 with a
2048x2048 network (weights and Adam state), with a closure learning rate so sanitize has a schedule to
replace and every other entry to write again.

    .venv-test/bin/python benchmarks/bench_model_safety.py [--runs 3]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import sys
import tempfile
import zipfile
from pathlib import Path

from timing import interleaved, seconds, summary

TEN_MB = 10 * 2 ** 20


def model(path: Path, payload: bytes, weights: bytes = b"") -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps({"policy_kwargs": {":type:": "<class 'dict'>", ":serialized:": base64.b64encode(payload).decode()}}))
        archive.writestr("system_info.txt", "- Python: 3.11.7\n")
        if weights:
            archive.writestr("policy.pth", weights)
    return path


def torch_zip(data_pkl: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as inner:
        inner.writestr("archive/data.pkl", data_pkl)
        inner.writestr("archive/version", "3\n")
    return buffer.getvalue()


def nested(size: int) -> bytes:
    depth = size // 2
    return b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."


PLAIN = b"\x80\x04G?\xb9\x99\x99\x99\x99\x99\x9a."
HOSTILE = {
    "10 MB of no-op opcodes in data": lambda: (b"\x80\x04" + b"N0" * (TEN_MB // 2) + b"N.", b""),
    "10 MB of nesting in data": lambda: (nested(TEN_MB), b""),
    "10 MB of nesting in policy.pth": lambda: (PLAIN, torch_zip(nested(TEN_MB))),
}


def big_model(folder: Path) -> Path:
    """A real PPO of about 100 MB (policy.pth ~34 MB, its Adam state ~67 MB), saved by SB3."""
    from stable_baselines3 import PPO

    def linear(initial):
        return lambda progress: progress * initial

    ppo = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64, n_epochs=1, learning_rate=linear(3e-4),
              policy_kwargs={"net_arch": [2048, 2048]}, device="cpu", seed=0)
    ppo.learn(64)
    path = folder / "big.zip"
    ppo.save(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    folder = Path(tempfile.mkdtemp(prefix="envdoctor-bench-"))
    envdoctor = [sys.executable, "-m", "envdoctor"]
    baseline = model(folder / "plain.zip", PLAIN)
    print(f"runs: {runs} each, interleaved with a plain tiny model, Python {sys.version.split()[0]}")
    for label, build in HOSTILE.items():
        payload, weights = build()
        path = model(folder / "hostile.zip", payload, weights)
        ours, plain = interleaved([*envdoctor, "inspect", "--json", "/dev/null", str(path)], [*envdoctor, "inspect", "--json", "/dev/null", str(baseline)], runs)
        print(summary(f"inspect: {label} ({path.stat().st_size / 2 ** 20:.1f} MB file)", ours))
        print(summary("  plain model", plain))
    big = big_model(folder)
    out = folder / "out.zip"
    sanitize = [*envdoctor, "sanitize", str(big), "-o", str(out), "--force"]
    times = [seconds(sanitize) for _ in range(runs + 1)][1:]
    print(summary(f"sanitize: PPO 2048x2048 ({big.stat().st_size / 2 ** 20:.0f} MB)", times))
    times = [seconds([*envdoctor, "inspect", "--json", "/dev/null", str(big)]) for _ in range(runs)]
    print(summary(f"inspect: the same model", times))


if __name__ == "__main__":
    main()
