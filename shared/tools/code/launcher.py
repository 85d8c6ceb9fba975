# Runs one sandboxed Python program: sets the resource limits, drops to a throwaway uid and runs main.py.
# Without namespaces it runs the program in a child it supervises: it enforces the wall clock, kills
# every process the program left, and reports on fd 3. Under bubblewrap the work dir is a size-capped tmpfs:
# the inputs are copied in from a read-only /.input first, and files to fetch are sent back on fd 3 after.
# Passed to `python3 -I -c` with positional arguments (see `cfg`). Standard library only, and only
# cheap modules at start-up (no json, no ctypes unless needed): this runs once per tool call.
import os
import resource
import sys

_a = sys.argv[1:]
cfg = {
    "workdir": _a[0],
    "uid": None if _a[1] == "-" else int(_a[1]),
    "wall_s": float(_a[2]),
    "cpu_s": int(_a[3]),
    "memory_bytes": int(_a[4]),
    "nproc": int(_a[5]),
    "fsize_bytes": int(_a[6]),
    # Under bubblewrap: no_new_privs is already set and the pid namespace reaps every process.
    "namespaced": _a[7] == "bwrap",
    # Under bubblewrap: where the inputs are to copy into the work dir, and the files to send back after.
    "input_dir": None if _a[8] == "-" else _a[8],
    "fetch": [] if _a[9] == "-" else _a[9].split("\n"),
}
FETCH_MAX_BYTES = 1024 * 1024
STATUS_FD = 3
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36


def prctl(option, value):
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def set_limit(res, soft, hard=None):
    resource.setrlimit(res, (soft, soft if hard is None else hard))


def copy_inputs(src):
    """The inputs into the work dir (the tmpfs), owned by the program's uid; before privileges are dropped."""
    for dirpath, _dirs, names in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        if rel != ".":
            os.mkdir(rel)
            own(rel)
        for name in names:
            dest = name if rel == "." else os.path.join(rel, name)
            with open(os.path.join(dirpath, name), "rb") as fin, open(dest, "wb") as fout:
                fout.write(fin.read())
            own(dest)


def own(path):
    if cfg["uid"] is not None:
        os.chown(path, cfg["uid"], cfg["uid"])


def send_fetched_files():
    """Under bubblewrap the tmpfs goes with the namespace: regular files asked for, never through a link,
    go back on fd 3 as `base64(name) base64(content)` lines."""
    from binascii import b2a_base64

    for name in cfg["fetch"]:
        parts = name.split("/")
        try:
            path = ""
            for part in parts:
                path = part if not path else path + "/" + part
                if os.lstat(path).st_mode & 0o170000 == 0o120000:  # a symlink on the way
                    raise OSError
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if st.st_mode & 0o170000 != 0o100000 or st.st_size > FETCH_MAX_BYTES:
                continue
            data = b""
            while len(data) <= FETCH_MAX_BYTES:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
        if len(data) <= FETCH_MAX_BYTES:
            line = b2a_base64(name.encode(), newline=False) + b" " + b2a_base64(data, newline=False) + b"\n"
            os.write(STATUS_FD, line)


def run_program():
    """Becomes the program: limits, throwaway uid, then main.py in this interpreter (no second start-up)."""
    if not cfg["namespaced"]:
        os.close(STATUS_FD)  # the program must not forge the supervisor's report
        os.setpgid(0, 0)
    # Read before dropping privileges: the work dir's parents may be closed to the throwaway uid.
    with open("main.py", "rb") as f:
        source = f.read()
    if not cfg["namespaced"]:
        prctl(PR_SET_NO_NEW_PRIVS, 1)  # setuid binaries cannot give privileges back
    if cfg["uid"] is not None:
        os.setgroups([])
        os.setgid(cfg["uid"])
        os.setuid(cfg["uid"])
    set_limit(resource.RLIMIT_CPU, cfg["cpu_s"], cfg["cpu_s"] + 1)
    set_limit(resource.RLIMIT_AS, cfg["memory_bytes"])
    set_limit(resource.RLIMIT_NPROC, cfg["nproc"])
    set_limit(resource.RLIMIT_FSIZE, cfg["fsize_bytes"])
    set_limit(resource.RLIMIT_NOFILE, 256)
    set_limit(resource.RLIMIT_CORE, 0)
    main = type(sys)("__main__")
    main.__file__ = "main.py"
    sys.modules["__main__"] = main
    sys.argv = ["main.py"]
    sys.path.insert(0, "")
    code = 0
    try:
        exec(compile(source, "main.py", "exec"), main.__dict__)  # noqa: S102 - running it is the point
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    except BaseException as e:  # noqa: BLE001 - print it like the interpreter would, minus our frames
        import traceback

        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "main.py":
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - a closed or full pipe must not change the exit code
            pass
    if cfg["namespaced"] and cfg["fetch"]:
        try:
            send_fetched_files()
        except Exception:  # noqa: BLE001, S110 - the program may have closed fd 3; its files are then lost
            pass
    os._exit(code & 0xFF)


def kill_everything(child):
    """Kills the program and everything it started, including daemons that left its process group."""
    if cfg["uid"] is not None:
        # A helper with the program's uid signals every process of that uid at once (kill(-1)), until
        # /proc shows none left, so a fork bomb cannot outrun it. (kill(-1) succeeds even when it only
        # met processes it may not signal, so its return value cannot say when to stop.)
        for _ in range(100):
            helper = os.fork()
            if helper == 0:
                try:
                    os.setgid(cfg["uid"])
                    os.setuid(cfg["uid"])
                    for _ in range(3):
                        os.kill(-1, signal.SIGKILL)
                finally:
                    os._exit(0)
            os.waitpid(helper, 0)
            reap()
            if not processes_of(cfg["uid"]):
                return
    else:
        try:
            os.killpg(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
        # Orphans re-parent to us (we are a subreaper): kill and reap until none remain.
        for _ in range(1000):
            kids = children_of(os.getpid())
            if not kids:
                break
            for pid in kids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            reap()


def processes_of(uid):
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    found.append(int(name))
            except OSError:
                continue
    return found


def children_of(parent):
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if int(fields[1]) == parent:
            found.append(int(name))
    return found


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class Stop(Exception):
    """Raised by SIGUSR1: the parent wants the program stopped now (output cap)."""


def on_stop(signum, frame):
    raise Stop


def main():
    os.chdir(cfg["workdir"])
    if cfg["input_dir"] is not None:
        own(".")
        copy_inputs(cfg["input_dir"])
    if cfg["namespaced"]:
        # Under bubblewrap the program needs no supervisor: the caller enforces the wall clock by
        # killing bwrap, bwrap reports the exit status, and the pid namespace takes every process
        # down with it. Skipping the fork keeps a call close to the cost of a bare interpreter.
        run_program()
    supervise()


def supervise():
    # Imported here: `signal` alone (enum, functools) costs a bare interpreter's start-up time again.
    global select, signal, time
    import select
    import signal
    import time

    if cfg["uid"] is None:
        prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans come back to us, to be killed
    start = time.monotonic()
    signal.signal(signal.SIGUSR1, on_stop)  # before fork: a stop request may come at once
    child = os.fork()
    if child == 0:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        run_program()
    os.write(STATUS_FD, b'{"child": %d}\n' % child)
    timed_out = stopped = False
    try:
        fd = os.pidfd_open(child)
        timed_out = not select.select([fd], [], [], cfg["wall_s"])[0]
        if timed_out:
            os.kill(child, signal.SIGKILL)
        _, status, usage = os.wait4(child, 0)
    except (AttributeError, OSError):  # no pidfd (kernel < 5.3): poll
        deadline = start + cfg["wall_s"]
        while True:
            pid, status, usage = os.wait4(child, os.WNOHANG)
            if pid != 0:
                break
            if time.monotonic() >= deadline:
                timed_out = True
                os.kill(child, signal.SIGKILL)
                _, status, usage = os.wait4(child, 0)
                break
            time.sleep(0.002)
    except Stop:
        stopped = True
        os.kill(child, signal.SIGKILL)
        _, status, usage = os.wait4(child, 0)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    kill_everything(child)
    reap()
    flag = {True: "true", False: "false"}
    cpu_s = usage.ru_utime + usage.ru_stime
    report = (
        f'{{"exit_code": {os.waitstatus_to_exitcode(status)}, "wall_timeout": {flag[timed_out]}, '
        f'"stopped": {flag[stopped]}, "cpu_s": {cpu_s:.6f}, "max_rss_kb": {usage.ru_maxrss}, '
        f'"wall_s": {time.monotonic() - start:.6f}}}\n'
    )
    os.write(STATUS_FD, report.encode())
    os._exit(0)


main()
