#!/usr/bin/python3
"""Drives `corral exec -it` / `corral run -it` as an operator's terminal would.

Usage: tty_driver.py [--sigterm] CORRAL_ARGS...   (the first is the corral binary)

Runs corral on a pty of our own (its controlling terminal, stdin, stdout, stderr) at a
window size of 31x101, then types into the shell that corral started in the jail:
  - `tty`, `stty size`, isatty -> what the command sees;
  - a resize to 41x121, then `stty size` again -> SIGWINCH forwarded;
  - `exit 7` -> the exit status corral passes through.
While the shell runs, the operator's terminal (our slave) must be raw; afterwards it must
be exactly as before. Prints one JSON object with what was observed (the C++ test asserts).
With --sigterm, corral gets SIGTERM after the first answer instead of the rest: the
terminal must be restored on that way out too.
"""
import fcntl
import json
import os
import pty
import select
import struct
import sys
import termios
import time

DEADLINE = time.monotonic() + 60


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def read_until(master, marker, out):
    while marker not in out[0]:
        left = DEADLINE - time.monotonic()
        if left <= 0:
            return False
        r, _, _ = select.select([master], [], [], left)
        if not r:
            continue
        try:
            data = os.read(master, 65536)
        except OSError:
            return False
        if not data:
            return False
        out[0] += data
    return True


def talk(master, slave, out, result):
    set_size(slave, 41, 121)
    # The size reaches corral as SIGWINCH; give it a moment before asking.
    time.sleep(0.3)
    os.write(master, b"echo \"<\"R2; stty size; echo R2\">\"\r")
    result["second"] = read_until(master, b"R2>", out)
    os.write(master, b"exit 7\r")


def main():
    args = sys.argv[1:]
    sigterm = args[0] == "--sigterm"
    if sigterm:
        args = args[1:]
    master, slave = pty.openpty()
    set_size(slave, 31, 101)
    before = termios.tcgetattr(slave)
    pid = os.fork()
    if pid == 0:
        os.close(master)
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        if slave > 2:
            os.close(slave)
        os.execv(args[0], args)
    out = [b""]
    result = {}
    # Mark each answer so the echo of the typed line (which holds the same words) is not
    # taken for it: the shell prints "<" ">" around, the typed line has them quoted.
    os.write(master, b"echo \"<\"R1; tty; stty size; test -t 0 && echo ISATTY; echo R1\">\"\r")
    result["first"] = read_until(master, b"R1>", out)
    result["raw_while_running"] = not (termios.tcgetattr(slave)[3] & (termios.ECHO | termios.ICANON))
    if sigterm:
        os.kill(pid, 15)
    else:
        talk(master, slave, out, result)
    status = None
    while time.monotonic() < DEADLINE:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                data = os.read(master, 65536)
                out[0] += data
            except OSError:
                pass
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    result["exit_code"] = os.waitstatus_to_exitcode(status) if status is not None else None
    result["restored"] = termios.tcgetattr(slave) == before
    result["output"] = out[0].decode("utf-8", "replace")
    print(json.dumps(result))


main()
