"""The console scripts of fairseq and syntrans, started for the tests from one process that has imported torch and
the libraries fairseq uses once (a fork server), instead of each command importing them again (measured: 12 s of a
tiny fairseq-train's 24 s were imports, 5.5 s more torch's compiler, which the first optimizer imports; fairseq's own
modules are about a fifth of the imports).

``shim_dir()`` is a folder holding, for every console script of the fairseq and syntrans distributions and for
``python -m MODULE`` (any other use of its ``python`` runs the real one), a small client under the same name
(``helpers.BIN``; the tests hand it to syntrans-reproduce as ``SYNTRANS_BIN``). The client hands its argv,
environment, working folder and standard streams (the file descriptors themselves) to the server, forwards
SIGTERM/SIGINT/SIGHUP to the command, and exits with the command's status. Each command runs in a child forked from
the server: its streams are the client's, its environment and folder the client's, ``sys.argv`` and ``__main__`` the
script's, warnings filters as ``PYTHONWARNINGS`` sets them in a new interpreter, and it calls the console script's
entry point as the script would (``sys.exit(main())``);
its atexit functions run at the end. The server imports torch, its compiler, the other third-party modules fairseq
needs, and fairseq itself, whose modules it then takes out of ``sys.modules`` again: a command's own first import of
fairseq gets them back through the import system, with what that import does in a new process (the handler it gives
the root logger on the command's own stderr, the messages it logs) done then (:class:`_FairseqAsImported`). A command
that never imports fairseq (the light ones of syntrans) runs without it, and syntrans itself, fairseq_cli's modules
and the command's module are imported by each command, in its own order, as in its own process. What differs from a
new process: the preloaded modules' bodies do not run again (what they do besides logging, such as a warning they
print, is not repeated), and the hash seed is the server's.

Until the server has imported everything (about 15 s after the session starts), and wherever it is not running, a
client replaces itself with the real script (``exec``): the command then runs exactly as without this module.
``SYNTRANS_TEST_FORKSERVER=0`` makes ``helpers.BIN`` the venv's own folder. Run as a script, this file is the server:
``python forkserver.py SOCKET``."""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ENV = "SYNTRANS_TEST_FORKSERVER"
REAL_BIN = Path(sys.executable).parent
DISTRIBUTIONS = ("fairseq-fixed", "fairseq", "syntrans")
#: imported by the server before it listens: the third-party modules every fairseq command imports, and torch's
#: compiler (the first optimizer imports it); then :data:`FAIRSEQ`.
PRELOAD = ("numpy", "torch", "torch._dynamo", "torch.optim", "sklearn.metrics", "scipy.stats", "omegaconf", "hydra",
           "sacrebleu", "sacremoses")
#: imported next (:func:`_preload_fairseq`), for the modules they import: fairseq's package and its commands' modules.
#: fairseq's modules are then taken out of ``sys.modules`` and given back at a command's first import of fairseq;
#: the fairseq_cli modules are dropped (fairseq-train configures logging in its module body, before it imports
#: fairseq: each command runs its module's body itself).
FAIRSEQ = ("fairseq", "fairseq_cli.train", "fairseq_cli.generate", "fairseq_cli.preprocess",
           "fairseq_cli.interactive", "fairseq_cli.score")


CLIENT = r'''#!{python} -IS
# a client of the tests' fork server ({server}): runs {name} there, or this script itself where no server listens
import os, signal, socket, struct, sys
REAL, SOCK = {real!r}, {sock!r}
closed = []  # standard descriptors this process was started without (`<&-`): the command starts without them too
for fd in (0, 1, 2):
    try:
        os.fstat(fd)
    except OSError:
        closed.append(fd)
for fd in closed:  # held by /dev/null meanwhile, so that the socket below cannot take one of them
    os.open(os.devnull, os.O_RDWR)
conn = None
def fallback():
    if conn is not None:
        conn.close()
    for fd in closed:
        os.close(fd)
    os.execv(REAL, [REAL] + sys.argv[1:])
if {name!r} == "python" and sys.argv[1:2] != ["-m"]:  # the server runs `python -m MODULE …` only
    fallback()
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    conn.connect(SOCK)
except OSError:
    fallback()
fds = [0, 1, 2]
head = repr(({name!r}, [REAL] + sys.argv[1:], dict(os.environ), os.getcwd(), closed)).encode()
socket.send_fds(conn, [struct.pack("!I", len(head)) + head], fds)
pid = struct.unpack("!i", conn.recv(4, socket.MSG_WAITALL) or b"\0\0\0\0")[0]
if pid <= 0:  # the server could not fork
    fallback()
forwarded = []
def forward(sig, frame):
    forwarded.append(sig)
    os.kill(pid, sig)
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, forward)
tail = b""
while len(tail) < 4:
    try:
        got = conn.recv(4 - len(tail))
    except InterruptedError:
        continue
    if not got:
        break
    tail += got
if len(tail) < 4:
    if forwarded:  # the command ended by the signal sent to this client: so does the client
        signal.signal(forwarded[-1], signal.SIG_DFL)
        os.kill(os.getpid(), forwarded[-1])
    os.write(2, b"forkserver: the command died without a status\n")
    sys.exit(1)
sys.exit(struct.unpack("!i", tail)[0])
'''


def entry_points() -> dict:
    """Console script name → ``module:function`` of :data:`DISTRIBUTIONS` installed here."""
    from importlib import metadata

    found = {}
    for dist in metadata.distributions():
        if dist.metadata["Name"] in DISTRIBUTIONS:
            for ep in dist.entry_points:
                if ep.group == "console_scripts":
                    found[ep.name] = ep.value
    return found


def shim_dir() -> Path:
    """A new folder of clients (one per console script of fairseq and syntrans; every other file of the venv's bin
    folder linked), removed when this process exits; the venv's own folder with ``SYNTRANS_TEST_FORKSERVER=0``."""
    if os.environ.get(ENV, "1") == "0":
        return REAL_BIN
    folder = Path(tempfile.mkdtemp(prefix="syntrans-bin-"))
    atexit.register(shutil.rmtree, folder, True)
    sock = str(folder / "server.sock")
    scripts = entry_points()
    for name in [*scripts, "python"]:
        client = folder / name
        client.write_text(CLIENT.format(python=sys.executable, server=__file__, name=name, real=str(REAL_BIN / name),
                                        sock=sock))
        client.chmod(0o755)
    for path in REAL_BIN.iterdir():
        if path.name not in scripts and path.name != "python":
            (folder / path.name).symlink_to(path)
    return folder


def start(folder: Path):
    """Start the server for the clients of ``folder``; returns the function that stops it (None when ``folder`` has
    no clients). The server also stops when this process exits."""
    if folder == REAL_BIN:
        return None
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    proc = subprocess.Popen([sys.executable, __file__, str(folder / "server.sock")], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()

    atexit.register(stop)
    return stop


# ---- the server -------------------------------------------------------------------------------------------------

def _recv_request(conn):
    msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    size = struct.unpack("!I", msg[:4])[0]
    while len(msg) < 4 + size:
        more = conn.recv(4 + size - len(msg))
        if not more:
            raise EOFError("the client went away")
        msg += more
    import ast

    name, argv, env, cwd, closed = ast.literal_eval(msg[4:4 + size].decode())
    return name, argv, env, cwd, closed, fds


def _watch_client(conn) -> None:
    """In the command's process: a client gone (killed) ends the command, as a killed process would."""
    import threading

    def watch():
        try:
            while conn.recv(1):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()


_KEPT: list = []
#: the server's own PYTHONPATH folders (already on its sys.path)
_SERVER_PYTHONPATH = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def _std_streams(env, closed) -> None:
    """sys.stdin/stdout/stderr made anew on descriptors 0–2, as the interpreter makes them at start (the server's
    own were made on other files: their buffers know nothing of a pipe's being unseekable); None for a descriptor the
    client was started without, as in a process started so."""
    encoding, _, errors = (env.get("PYTHONIOENCODING") or "utf-8").partition(":")
    made = []
    for fd, mode in ((0, "r"), (1, "w"), (2, "w")):
        if fd in closed:
            made.append(None)
            continue
        err = errors or ("backslashreplace" if fd == 2 else "strict")
        line = fd == 2 or (fd == 1 and os.isatty(1))
        made.append(open(fd, mode, buffering=1 if line else -1, encoding=encoding, errors=err, closefd=False))
    _KEPT.extend((sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__))  # collected, the
    sys.stdin, sys.stdout, sys.stderr = made                        # server's objects would close descriptors 0–2
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made


def _preload_fairseq():
    """Import :data:`FAIRSEQ`, then take fairseq's modules out of ``sys.modules`` again (a command's own first
    import of fairseq puts them back: :class:`_FairseqAsImported`), and drop the fairseq_cli ones. Returns (the
    fairseq modules, what importing fairseq did: the handlers it gave the root logger as (stream name, formatter,
    level), the root's level after it, the warnings filters it added, the messages it logged), or None where it did
    something a command could not be given again (then nothing of fairseq stays imported). The root logger and the
    warnings filters are left as they were before."""
    import importlib
    import logging
    import warnings

    root = logging.getLogger()
    handlers, level, filters, modules = list(root.handlers), root.level, list(warnings.filters), set(sys.modules)
    logged, call_handlers = [], logging.Logger.callHandlers
    logging.Logger.callHandlers = lambda logger, record: (logged.append(record), call_handlers(logger, record))
    try:
        importlib.import_module(FAIRSEQ[0])
    finally:
        logging.Logger.callHandlers = call_handlers
    made = [h for h in root.handlers if h not in handlers]
    effect = ([], root.level if made else None, [f for f in warnings.filters if f not in filters], logged)
    for handler in made:
        stream = {id(sys.stdout): "stdout", id(sys.stderr): "stderr"}.get(id(getattr(handler, "stream", None)))
        if type(handler) is not logging.StreamHandler or stream is None or handler.filters:
            effect = None
            break
        effect[0].append((stream, handler.formatter, handler.level))
    root.handlers[:] = handlers
    root.setLevel(level)
    if effect is not None:
        for module in FAIRSEQ[1:]:
            importlib.import_module(module)
        import hydra_memo

        hydra_memo.warm()  # the overrides of fairseq's defaults parsed once for every command (tests/hydra_memo.py)
        root.handlers[:] = handlers
        root.setLevel(level)
    warnings.filters[:] = filters
    stash = {}
    for module in [m for m in sys.modules if m not in modules and m.partition(".")[0] in ("fairseq", "fairseq_cli")]:
        if module.partition(".")[0] == "fairseq":
            stash[module] = sys.modules[module]
        del sys.modules[module]
    return None if effect is None else (stash, effect)


class _FairseqAsImported:
    """In a command (a finder first on ``sys.meta_path``): the command's first import of fairseq gives it the
    server's modules, and does what that import does in a new process, as :func:`_preload_fairseq` recorded it:
    the warnings filters put first; as logging.basicConfig does, the handlers (on the command's own streams) and
    level given to the root logger only where the root has no handler yet; and the messages it logged logged again
    now, where their loggers log at that level. It goes through the import system (a loader), so that import
    hooks of the command's own (syntrans' registration, which wraps fairseq's loader) see fairseq load."""

    def __init__(self, preloaded):
        self.stash, self.effect = preloaded
        self.spec = self.stash["fairseq"].__spec__

    def find_spec(self, name, path=None, target=None):
        if name != "fairseq":
            return None
        import copy

        spec = copy.copy(self.spec)
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self.stash["fairseq"]

    def exec_module(self, module):
        import logging
        import time
        import warnings

        if self in sys.meta_path:
            sys.meta_path.remove(self)
        module.__spec__, module.__loader__ = self.spec, self.spec.loader
        sys.modules.update(self.stash)
        made, root_level, filters, logged = self.effect
        warnings.filters[:0] = filters
        root = logging.getLogger()
        if made and not root.handlers:
            for stream, formatter, handler_level in made:
                handler = logging.StreamHandler(getattr(sys, stream))
                handler.setFormatter(formatter)
                handler.setLevel(handler_level)
                root.addHandler(handler)
            root.setLevel(root_level)
        for record in logged:
            logger = logging.getLogger(record.name)
            if logger.isEnabledFor(record.levelno):
                again = logging.makeLogRecord(record.__dict__)
                again.created = time.time()
                again.msecs = int(again.created * 1000) % 1000
                again.relativeCreated = (again.created - logging._startTime) * 1000
                logger.handle(again)


def _run_command(conn, name, argv, env, cwd, closed, fds, scripts, base_filters, fairseq) -> int:
    """In the forked child: become the command ``name`` and return its exit status."""
    import importlib
    import traceback
    import types
    import warnings

    conn.sendall(struct.pack("!i", os.getpid()))  # first: the client then waits for a status, whatever happens
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    for fd in closed:
        os.close(fd)
    _std_streams(env, closed)
    atexit._clear()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(argv[0])
    # PYTHONPATH's folders that the server's lacks go where a new interpreter puts them: right after the first entry
    added = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[1:1] = [p for p in added if p not in _SERVER_PYTHONPATH]
    main = types.ModuleType("__main__")
    main.__file__ = argv[0]
    sys.modules["__main__"] = main
    warnings.filters[:] = base_filters
    for option in reversed([o for o in env.get("PYTHONWARNINGS", "").split(",") if o]):
        warnings._setoption(option)
    if fairseq is not None:
        sys.meta_path.insert(0, _FairseqAsImported(fairseq))
    _watch_client(conn)
    code = 0
    try:
        if name == "python":  # python -m MODULE ARGS…: the module run as __main__, the working folder first on the path
            import runpy

            sys.argv = ["-m", *argv[3:]]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        else:
            module, _, func = scripts[name].partition(":")
            target = importlib.import_module(module)
            for part in func.split("."):
                target = getattr(target, part)
            code = target()
    except SystemExit as exit_:
        code = exit_.code
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
    return code


def serve(path: str) -> None:
    import importlib
    import warnings

    base_filters = list(warnings.filters)
    for module in PRELOAD:
        importlib.import_module(module)
    warnings.filters[:] = base_filters
    fairseq = _preload_fairseq()
    scripts = entry_points()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel; clients get their status
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = path + ".tmp"
    listener.bind(tmp)
    listener.listen(16)
    os.rename(tmp, path)  # clients connect only once everything is imported
    parent = os.getppid()
    listener.settimeout(2)  # how soon a server whose test process was killed notices (one cheap check each time)
    while True:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            if os.getppid() != parent:  # the test process died without stopping its server (killed): so does it
                return
            continue
        conn.settimeout(None)
        try:
            request = _recv_request(conn)
        except (OSError, EOFError, ValueError, SyntaxError):
            conn.close()
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            listener.close()
            status = 1
            try:
                status = _run_command(conn, *request, scripts, base_filters, fairseq)
            except BaseException:  # the server's own failure in making the command's process: on its stderr
                import traceback

                traceback.print_exc()
            finally:
                try:
                    conn.sendall(struct.pack("!i", int(status) & 0xFF))
                except OSError:
                    pass
                os._exit(int(status) & 0xFF)
        for fd in request[-1]:
            os.close(fd)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
