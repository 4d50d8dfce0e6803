# expect: run.exception undefined-symbol confirmed
# An extension built against a library version that had a function the loaded one lacks.
import ctypes, subprocess
open("ext.c", "w").write("extern int solver_step_v2(int); int run(void) { return solver_step_v2(1); }\n")
subprocess.run(["gcc", "-shared", "-fPIC", "ext.c", "-o", "libext.so"], check=True)
ctypes.CDLL("./libext.so", mode=ctypes.RTLD_GLOBAL | 2)  # RTLD_NOW: resolve every symbol at load
