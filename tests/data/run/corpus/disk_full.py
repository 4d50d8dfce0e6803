# expect: run.exception no-space confirmed
# A checkpoint written to a full disk (/dev/full answers every write with ENOSPC).
with open("/dev/full", "wb") as checkpoint:
    checkpoint.write(b"\x00" * 4096)
