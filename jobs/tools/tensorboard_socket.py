"""TensorBoard on a Unix socket, for the console's proxy.

TensorBoard has no authentication of its own and only listens on TCP, where any process of
the machine could reach it. Served on a socket in a folder only the job's user may enter,
it is reachable through the console's proxy alone, which checks the viewer's login and the
job's permission (SPEC O9, P).

Run with the image's Python: ``python tensorboard_socket.py --socket PATH -- <tensorboard
flags>``; the flags are TensorBoard's own (``--logdir``, ``--path_prefix``).
"""

import os
import socket
import sys

from tensorboard import program
from werkzeug.serving import make_server


def server_class(socket_path):
    class SocketServer(program.TensorBoardServer):
        def __init__(self, wsgi_app, flags):
            # A socket's path holds at most 107 bytes: bind by its name in its folder.
            folder, name = os.path.split(socket_path)
            os.chdir(folder or ".")
            if os.path.exists(name):
                os.unlink(name)
            listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listening.bind(name)
            listening.listen(64)
            self._listening = listening  # werkzeug serves a copy of it: keep this one open
            self._server = make_server(
                "unix://" + name, 0, wsgi_app, threaded=True, fd=listening.fileno()
            )

        def serve_forever(self):
            self._server.serve_forever()

        def get_url(self):
            return "unix://" + socket_path

        def print_serving_message(self):
            print(f"TensorBoard is serving on {socket_path}", flush=True)

    return SocketServer


class Board(program.TensorBoard):
    def _register_info(self, server):
        """TensorBoard notes its TCP port for notebooks' ``%tensorboard``: there is none."""


def main(argv):
    if len(argv) < 3 or argv[0] != "--socket" or "--" not in argv:
        sys.exit("usage: tensorboard_socket.py --socket PATH -- [tensorboard flags]")
    socket_path = argv[1]
    flags = argv[argv.index("--") + 1 :]
    board = Board(server_class=server_class(socket_path))
    board.configure(argv=[sys.argv[0], *flags])
    sys.exit(board.main())


if __name__ == "__main__":
    main(sys.argv[1:])
