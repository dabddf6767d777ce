"""A safe way for a snippet to run a tool: `from corral import secure_command;
secure_command.run("curl", args=["-s", "https://api.example.com"], timeout=10)`.

Only the executables on python.commands run (corral resolved each to an absolute path when
it loaded the config); argv goes to execve without a shell, a timeout is required and
enforced, and each output stream is capped. It runs inside the same jail as the snippet,
under its limits and network policy: this is a convenience with guard rails, not a way out.
"""
import os
import selectors
import signal
import subprocess
import time

# Set by corral's runner from the policy: name -> absolute path, and the output cap.
_COMMANDS = {}
_OUTPUT_CAP = 1024 * 1024
_MAX_TIMEOUT = 3600.0


class CommandNotAllowed(PermissionError):
    """The command is not on python.commands."""


class CommandResult:
    def __init__(self, argv, exit_code, stdout, stderr, timed_out, truncated):
        self.argv = argv
        self.exit_code = exit_code  # None when the timeout killed it
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        self.truncated = truncated  # some output past the cap was dropped

    @property
    def ok(self):
        return self.exit_code == 0

    def __repr__(self):
        return "CommandResult(argv=%r, exit_code=%r, timed_out=%r)" % (
            self.argv, self.exit_code, self.timed_out)


def _configure(commands, output_cap):
    _COMMANDS.clear()
    _COMMANDS.update(commands)
    global _OUTPUT_CAP
    _OUTPUT_CAP = int(output_cap)


def allowed():
    """The commands this snippet may run: {name: absolute path}."""
    return dict(_COMMANDS)


def _resolve(command):
    if command in _COMMANDS:
        return _COMMANDS[command]
    if command in _COMMANDS.values():
        return command
    names = ", ".join(sorted(_COMMANDS)) or "none"
    raise CommandNotAllowed("command %r is not allowed (python.commands; allowed: %s)"
                            % (command, names))


def run(command, args=(), timeout=30, input=None, cwd=None):
    """Runs an allowed command; returns a CommandResult (stdout/stderr as text)."""
    path = _resolve(command)
    if isinstance(args, (str, bytes)):
        raise TypeError("args must be a list of strings, not one string (no shell here)")
    argv = [path] + [str(a) for a in args]
    timeout = float(timeout)
    if not 0 < timeout <= _MAX_TIMEOUT:
        raise ValueError("timeout must be in (0, %d] seconds" % _MAX_TIMEOUT)
    proc = subprocess.Popen(argv, shell=False, cwd=cwd, close_fds=True, start_new_session=True,
                            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if input is not None:
        try:
            proc.stdin.write(input.encode() if isinstance(input, str) else input)
        except BrokenPipeError:
            pass
        proc.stdin.close()
    out, err, timed_out, truncated = _drain(proc, time.monotonic() + timeout)
    return CommandResult(argv, None if timed_out else proc.returncode,
                         out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                         timed_out, truncated)


def _drain(proc, deadline):
    """Reads both pipes until EOF or the deadline, keeping at most _OUTPUT_CAP bytes each."""
    buffers = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    truncated = False
    timed_out = False
    with selectors.DefaultSelector() as sel:
        for pipe in buffers:
            sel.register(pipe, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = buffers[key.fileobj]
                room = _OUTPUT_CAP - len(buf)
                if len(chunk) > room:
                    truncated = True
                buf += chunk[:max(room, 0)]
    if timed_out:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    for pipe in buffers:
        pipe.close()
    return bytes(buffers[proc.stdout]), bytes(buffers[proc.stderr]), timed_out, truncated
