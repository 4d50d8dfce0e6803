"""The probe ladder, run under the diagnosed interpreter: each rung loads a bit more of the native stack.

numpy → torch → a BLAS matmul → the thread pools → CUDA → gymnasium/SB3/sb3-contrib → a tiny
MaskablePPO that learns and round-trips through save/load, all in this one process, so torch is
imported once. Before a stage starts its name is written and flushed; when it ends its status and
duration follow. A native crash therefore leaves a `begin` without an `end`, and the parent knows the
stage that died; `-X faulthandler` puts the Python stack on stderr. A hang is caught here: every
stage arms `faulthandler.dump_traceback_later(..., exit=True)`, which dumps every thread's stack and
exits when the stage runs past its limit.

Events go to the original stdout as lines starting with MARK. The stages' own output (and anything a
native library prints) is sent to stderr by pointing fd 1 at fd 2, so it can never look like an event.

Stdlib only, Python 3.8 syntax, never imports envdoctor. The doctor imports this module for STAGES
and MARK, the one copy of the stage table and the event marker, so importing it runs nothing.
Arguments: --until STAGE, --device auto|cpu|cuda, --limits JSON {stage: seconds}, --deadline SECONDS.
"""

import argparse
import collections
import faulthandler
import importlib.util
import io
import json
import os
import re
import sys
import time
import traceback

MARK = "@envdoctor-probe "
INNERMOST_FRAMES = 8
PARTIAL_MODULE = re.compile(r"partially initialized module '([^']+)'")
EVENTS = None  # the original stdout, opened in main()


class Stage(collections.namedtuple("Stage", "id title limit_s function modules needs cuda", defaults=((), (), False))):
    """One rung: its id, what a person reads, how long it may take before it counts as a hang, the
    function that runs it, the modules it imports that may be missing, the stages that must have
    passed first, and whether it uses the GPU."""

    __slots__ = ()


class Skip(Exception):
    """A stage that cannot run here (no GPU, a CPU-only build); not a failure."""


def emit(event, **fields):
    fields["event"] = event
    EVENTS.write(MARK + json.dumps(fields, default=str) + "\n")
    EVENTS.flush()


def stage_interpreter(ctx):
    return {"version": sys.version.split()[0], "executable": sys.executable, "prefix": sys.prefix}


def stage_import_numpy(ctx):
    import numpy

    return {"version": numpy.__version__, "file": numpy.__file__}


def stage_import_torch(ctx):
    import torch

    return {"version": torch.__version__, "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None), "file": torch.__file__}


def stage_cpu_ops(ctx):
    import torch

    a = torch.randn(256, 256, generator=torch.Generator().manual_seed(0))
    product = a @ a.T
    if not torch.allclose(product, product.T, atol=1e-3):
        raise AssertionError("the CPU matmul a @ a.T is not symmetric: BLAS returns wrong results")
    details = {"elementwise_sum": float((a.relu() + 1).sum()), "cpu_capability": cpu_capability(torch)}
    if "numpy" in sys.modules:
        numpy = sys.modules["numpy"]
        square = numpy.ones((128, 128)) @ numpy.ones((128, 128))
        if float(square[0, 0]) != 128.0:
            raise AssertionError("numpy's BLAS matmul returns wrong results")
        details["numpy_matmul"] = True
    return details


def cpu_capability(torch):
    try:
        return torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # torch < 2.0
        return None


def stage_thread_pools(ctx):
    import torch

    details = {
        "torch_num_threads": torch.get_num_threads(),
        "torch_num_interop_threads": torch.get_num_interop_threads(),
        "parallel_info": torch.__config__.parallel_info(),
        "libraries": None,
    }
    libraries = threadpool_libraries()
    if libraries is not None:
        details["libraries"] = libraries
        openmp = sorted({lib["filepath"] for lib in libraries if lib.get("user_api") == "openmp"})
        details["openmp_runtimes"] = [lib for lib in libraries if lib.get("filepath") in openmp]
    return details


def threadpool_libraries():
    """threadpoolctl's view of the loaded BLAS/OpenMP libraries, or None without threadpoolctl.

    Importing threadpoolctl sets KMP_DUPLICATE_LIB_OK=True, which would hide the very duplicate
    OpenMP runtime this looks for from later stages; the environment is put back afterwards.
    """
    if importlib.util.find_spec("threadpoolctl") is None:
        return None
    before = dict(os.environ)
    try:
        import threadpoolctl

        info = threadpoolctl.threadpool_info()
    finally:
        for name in set(os.environ) - set(before):
            del os.environ[name]
        os.environ.update(before)
    keys = ("user_api", "internal_api", "prefix", "filepath", "version", "num_threads", "threading_layer", "architecture")
    return [{key: lib.get(key) for key in keys if key in lib} for lib in info]


def gpu_present():
    try:
        return bool(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/kfd")


def stage_cuda_init(ctx):
    import torch

    if not (torch.version.cuda or getattr(torch.version, "hip", None)):
        raise Skip("torch %s is a CPU-only build" % torch.__version__)
    if ctx["device"] == "cpu":
        raise Skip("the probe was asked to use the CPU only")
    if not torch.cuda.is_available():
        if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
            raise Skip("CUDA_VISIBLE_DEVICES hides every GPU")
        if not gpu_present():
            raise Skip("no GPU on this machine")
        torch.cuda.init()  # raises the driver's own reason
        raise RuntimeError("torch.cuda.is_available() is False although a GPU is present")
    torch.cuda.init()
    props = torch.cuda.get_device_properties(0)
    capability = torch.cuda.get_device_capability(0)
    arch_list = torch.cuda.get_arch_list()
    return {
        "device_count": torch.cuda.device_count(),
        "name": props.name,
        "total_memory_bytes": props.total_memory,
        "capability": "%d.%d" % capability,
        "arch_list": arch_list,
        "kernels_for_device": has_kernels(capability, arch_list),
        "runtime": torch.version.cuda or torch.version.hip,
        "cudnn": cudnn_version(torch),
    }


def cudnn_version(torch):
    """cuDNN's version as torch loads it (90100 is 9.1.0), or None where torch has no cuDNN."""
    try:
        return torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception:  # noqa: BLE001 - a broken cuDNN is itself a fact; its loader errors vary
        return None


def has_kernels(capability, arch_list):
    """Whether the build carries code for this GPU: a cubin of the same major and no newer minor,
    or PTX of an older or equal architecture that the driver can compile."""
    major, minor = capability
    for arch in arch_list:
        match = re.match(r"(sm|compute)_(\d+)(\d)[a-z]?$", arch)
        if not match:
            continue
        kind, arch_major, arch_minor = match.group(1), int(match.group(2)), int(match.group(3))
        if kind == "sm" and arch_major == major and arch_minor <= minor:
            return True
        if kind == "compute" and (arch_major, arch_minor) <= (major, minor):
            return True
    return False


def stage_cuda_matmul(ctx):
    import torch

    a = torch.randn(256, 256, generator=torch.Generator().manual_seed(0))
    on_gpu = a.to("cuda")
    product = (on_gpu @ on_gpu).cpu()
    torch.cuda.synchronize()
    if not torch.allclose(product, a @ a, rtol=1e-3, atol=1e-2):
        raise AssertionError("the CUDA matmul differs from the CPU result")
    return {"device": torch.cuda.get_device_name(0)}


def stage_import_gymnasium(ctx):
    import gymnasium

    return {"version": gymnasium.__version__}


def stage_import_sb3(ctx):
    import stable_baselines3

    return {"version": stable_baselines3.__version__}


def stage_import_sb3_contrib(ctx):
    import sb3_contrib

    return {"version": sb3_contrib.__version__}


def masked_env():
    """A four-float observation, three actions of which the last is always masked out."""
    import gymnasium
    import numpy

    class MaskedEnv(gymnasium.Env):
        observation_space = gymnasium.spaces.Box(-1.0, 1.0, (4,), numpy.float32)
        action_space = gymnasium.spaces.Discrete(3)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.steps = 0
            return self.observation_space.sample(), {}

        def step(self, action):
            self.steps += 1
            return self.observation_space.sample(), float(action == 0), self.steps >= 16, False, {}

        def action_masks(self):
            return numpy.array([True, True, False])

    return MaskedEnv()


def silent_logger():
    """A logger that writes nowhere: SB3's default one makes a tempdir/SB3-<time> folder at learn()
    that nobody removes, and the probe leaves nothing behind."""
    from stable_baselines3.common.logger import Logger

    return Logger(folder=None, output_formats=[])


def stage_maskable_ppo(ctx):
    from sb3_contrib import MaskablePPO

    device = "cuda" if ctx["passed"].get("cuda_matmul") else "cpu"
    env = masked_env()
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device=device, verbose=0)
    model.set_logger(silent_logger())
    observation, _ = env.reset(seed=0)
    action, _ = model.predict(observation, action_masks=env.action_masks(), deterministic=True)
    if int(action) == 2:
        raise AssertionError("MaskablePPO chose the masked-out action")
    ctx["model"], ctx["env"] = model, env
    return {"device": str(model.device)}


def stage_learn(ctx):
    model = ctx["model"]
    model.learn(64)
    return {"timesteps": model.num_timesteps}


def stage_save_load(ctx):
    from sb3_contrib import MaskablePPO

    model, env = ctx["model"], ctx["env"]
    buffer = io.BytesIO()
    model.save(buffer)
    size = buffer.tell()
    buffer.seek(0)
    loaded = MaskablePPO.load(buffer, device=model.device)
    for seed in range(8):
        observation, _ = env.reset(seed=seed)
        mask = env.action_masks()
        first = model.predict(observation, action_masks=mask, deterministic=True)[0]
        again = loaded.predict(observation, action_masks=mask, deterministic=True)[0]
        if int(first) != int(again):
            raise AssertionError("the reloaded model acts differently from the saved one")
    return {"zip_bytes": size}


# The one stage table: the doctor reads it by importing this module, the probe runs it.
STAGES = (
    Stage("interpreter", "interpreter start", 30, stage_interpreter),
    Stage("import_numpy", "import numpy", 60, stage_import_numpy, modules=("numpy",)),
    Stage("import_torch", "import torch", 120, stage_import_torch, modules=("torch",)),
    Stage("cpu_ops", "CPU tensor op + BLAS matmul", 60, stage_cpu_ops, needs=("import_torch",)),
    Stage("thread_pools", "thread pools (OpenMP/BLAS)", 30, stage_thread_pools, needs=("import_torch",)),
    Stage("cuda_init", "CUDA init + device properties", 120, stage_cuda_init, needs=("import_torch",), cuda=True),
    Stage("cuda_matmul", "CUDA matmul", 60, stage_cuda_matmul, needs=("cuda_init",), cuda=True),
    Stage("import_gymnasium", "import gymnasium", 60, stage_import_gymnasium, modules=("gymnasium",), needs=("import_numpy",)),
    Stage("import_sb3", "import stable_baselines3", 60, stage_import_sb3, modules=("stable_baselines3",), needs=("import_torch", "import_gymnasium")),
    Stage("import_sb3_contrib", "import sb3_contrib", 60, stage_import_sb3_contrib, modules=("sb3_contrib",), needs=("import_sb3",)),
    # Constructing the first model imports torch._dynamo (Optimizer.__init__ does), most of its time
    # (docs/knowledge/sb3-model-files.md §1).
    Stage("maskable_ppo", "MaskablePPO construct", 120, stage_maskable_ppo, needs=("import_sb3_contrib",)),
    Stage("learn", "learn 64 steps", 120, stage_learn, needs=("maskable_ppo",)),
    Stage("save_load", "save/load round trip", 60, stage_save_load, needs=("learn",)),
)


def module_name(path, roots):
    """The dotted module name of a source file, from the sys.path entry it lies under.
    A failed import has already left sys.modules, so the path is all there is."""
    path = os.path.realpath(path)
    for root in roots:
        if path.startswith(root + os.sep) and path.endswith(".py"):
            parts = path[len(root) + 1 : -3].split(os.sep)
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join(parts) if parts else None
    return None


def distribution_version(package):
    try:
        from importlib import metadata
    except ImportError:
        return None
    names = [package]
    if hasattr(metadata, "packages_distributions"):
        names = metadata.packages_distributions().get(package, []) + names
    for name in names:
        try:
            return {"distribution": name, "version": metadata.version(name)}
        except Exception:
            continue
    return None


def circular_import(error, frames):
    """For a "partially initialized module" error: the package, its version and the import cycle,
    read from the modules whose code is on the traceback, from the first frame of the half-made module."""
    match = PARTIAL_MODULE.search(str(error))
    if not match:
        return None
    module = match.group(1)
    roots = sorted({os.path.realpath(p) for p in sys.path if p}, key=len, reverse=True)
    names = [module_name(frame.filename, roots) for frame in frames]
    start = names.index(module) if module in names else 0
    cycle = []
    for name in names[start:]:
        if name and (not cycle or cycle[-1] != name):
            cycle.append(name)
    package = module.split(".")[0]
    return {"module": module, "package": package, "distribution": distribution_version(package), "cycle": cycle + [module]}


def describe_exception(error):
    frames = traceback.extract_tb(error.__traceback__)
    return {
        "type": "%s.%s" % (type(error).__module__, type(error).__qualname__) if type(error).__module__ != "builtins" else type(error).__name__,
        "message": str(error)[:4000],
        "frames": [{"file": f.filename, "line": f.lineno, "function": f.name, "code": f.line} for f in frames[-INNERMOST_FRAMES:]][::-1],
        "circular_import": circular_import(error, frames),
    }


def module_origins(modules):
    """Where each of a failed stage's modules was imported from (its file, or a namespace package's first
    folder): a local torch/ folder that shadows the installed torch shows here, not on the traceback."""
    found = {}
    for name in modules:
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", None) or ()), None)
        if isinstance(origin, str):
            found[name] = origin
    return found


def blocked(ctx, modules, needs):
    """Why a stage cannot run: (status, reason, missing module) or None when it can.
    Its own missing module is named first: that is the install hint a user needs."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            return "skipped", "%s is not installed" % module, module
    for need in needs:
        status = ctx["status"].get(need)
        if status == "skipped":
            return "skipped", "needs %s, which was skipped" % need, ctx["missing"].get(need)
        if status != "passed":
            return "not_run", "needs %s, which %s" % (need, "failed" if status == "failed" else "did not run"), None
    return None


def arm_watchdog(stage, limits, deadline):
    limit = min(limits.get(stage, deadline), deadline - time.monotonic())
    faulthandler.dump_traceback_later(max(limit, 0.1), exit=True)
    return limit


def run_stage(ctx, stage, limits, deadline):
    """Announce the stage before anything of it runs: even the look-up of its modules can crash."""
    emit("begin", stage=stage.id, limit_s=round(arm_watchdog(stage.id, limits, deadline), 3))
    started = time.monotonic()
    fields = {}
    try:
        why_not = blocked(ctx, stage.modules, stage.needs)
        if why_not:
            status, fields["reason"], fields["missing"] = why_not
        else:
            fields["details"] = stage.function(ctx)
            status = "passed"
    except Skip as reason:
        status, fields["reason"] = "skipped", str(reason)
    except BaseException as error:  # a stage's failure is the result, whatever it raises
        status, fields["error"] = "failed", describe_exception(error)
        fields["error"]["origins"] = module_origins(stage.modules)
    faulthandler.cancel_dump_traceback_later()
    ctx["status"][stage.id], ctx["missing"][stage.id] = status, fields.get("missing")
    ctx["passed"][stage.id] = status == "passed"
    emit("end", stage=stage.id, status=status, duration_s=round(time.monotonic() - started, 4), **fields)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(prog="envdoctor-ladder")
    parser.add_argument("--until", default=None)
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--limits", default="{}")
    parser.add_argument("--deadline", type=float, default=600.0)
    return parser.parse_args(argv)


def main(argv):
    global EVENTS
    started = time.monotonic()
    arguments = parse_arguments(argv)
    EVENTS = os.fdopen(os.dup(1), "w")
    sys.stdout.flush()
    os.dup2(2, 1)
    faulthandler.enable(all_threads=True)
    names = [stage.id for stage in STAGES]
    last = names.index(arguments.until) if arguments.until in names else len(names) - 1
    emit("plan", stages=names[: last + 1], python=sys.version.split()[0], pid=os.getpid())
    ctx = {"device": arguments.device, "status": {}, "passed": {}, "missing": {}}
    limits = json.loads(arguments.limits)
    deadline = started + arguments.deadline
    for stage in STAGES[: last + 1]:
        run_stage(ctx, stage, limits, deadline)
    emit("done", duration_s=round(time.monotonic() - started, 4))
    EVENTS.close()
    sys.stderr.flush()
    os._exit(0)  # skips torch's slow interpreter teardown; every result is already written


if __name__ == "__main__":
    main(sys.argv[1:])
