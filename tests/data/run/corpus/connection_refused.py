# expect: run.exception connection-refused confirmed
# A client connecting to a simulator server that has not started.
import socket
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1]
probe.close()
socket.create_connection(("127.0.0.1", port), timeout=5)
