# expect: run.exception open-files confirmed
# Episode logs opened and never closed, under a container's open-file limit.
import resource
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
logs = [open(f"episode_{i}.log", "w") for i in range(200)]
