# Runs one sandboxed Python program: sets the resource limits, drops to a throwaway uid, runs main.py
# in a child, enforces the wall clock, then kills every process the program left and reports on fd 3.
# Passed to `python3 -I -c`; argv[1] is a JSON config. Standard library only.
import ctypes
import json
import os
import resource
import select
import signal
import sys
import time

cfg = json.loads(sys.argv[1])
STATUS_FD = 3
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
libc = ctypes.CDLL(None, use_errno=True)


def set_limit(res, soft, hard=None):
    resource.setrlimit(res, (soft, soft if hard is None else hard))


def run_child():
    os.close(STATUS_FD)  # the program must not forge the report
    os.setpgid(0, 0)
    with open(
        "main.py", "rb"
    ) as f:  # read before dropping privileges: the work dir's parents may be closed
        source = f.read()
    libc.prctl(
        PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0
    )  # setuid binaries cannot give privileges back
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
    import types

    main = types.ModuleType("__main__")
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
    os._exit(code & 0xFF)


def kill_everything(child):
    """Kills the program and everything it started, including daemons that left its process group."""
    if cfg["uid"] is not None:
        # A helper with the program's uid signals every process of that uid at once (kill(-1)),
        # repeated until none is left so a fork bomb cannot outrun it.
        helper = os.fork()
        if helper == 0:
            try:
                os.setgid(cfg["uid"])
                os.setuid(cfg["uid"])
                for _ in range(1000):
                    os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
            finally:
                os._exit(0)
        os.waitpid(helper, 0)
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
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    os.chdir(cfg["workdir"])
    start = time.monotonic()
    signal.signal(
        signal.SIGUSR1, on_stop
    )  # before fork: a stop request may come at once
    child = os.fork()
    if child == 0:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        run_child()
    os.write(STATUS_FD, json.dumps({"child": child}).encode() + b"\n")
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
    report = {
        "exit_code": os.waitstatus_to_exitcode(status),
        "wall_timeout": timed_out,
        "stopped": stopped,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "max_rss_kb": usage.ru_maxrss,
        "wall_s": time.monotonic() - start,
    }
    os.write(STATUS_FD, json.dumps(report).encode() + b"\n")
    os._exit(0)


main()
