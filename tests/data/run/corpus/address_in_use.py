# expect: run.exception address-in-use confirmed
# Two servers on one port (a previous run's still holds it).
import socket
first = socket.socket()
first.bind(("127.0.0.1", 0))
first.listen()
second = socket.socket()
second.bind(first.getsockname())
