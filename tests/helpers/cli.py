"""Running the real `farm` entry point in a child process, isolated from the developer's environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from farm.sim.launcher import free_port

ENTRY = "import sys; from farm.cli import main; main(sys.argv[1:])"


def isolated_env(cwd: Path, **extra: str) -> dict[str, str]:
    """HOME, logs and sim state inside `cwd`, and an adb port where no server runs (override with extra)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "COLUMNS": "80",
        "HOME": str(cwd / "home"), "FARM_LOG_DIR": str(cwd / "logs"), "FARM_SIM_STATE_DIR": str(cwd / "simstate"),
        "ANDROID_ADB_SERVER_PORT": str(free_port()), "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(extra)
    return env


def farm(cwd: Path, *args: str, stdin: int | None = subprocess.DEVNULL, timeout: float = 120,
         **env: str) -> subprocess.CompletedProcess[str]:
    """`farm args…` in `cwd`, stdout and stderr captured (so neither is a terminal)."""
    return subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=cwd, env=isolated_env(cwd, **env), stdin=stdin,
                          capture_output=True, text=True, timeout=timeout, check=False)


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The last stderr line, checked to be the one `error: ` line of a refusal with exit status 2."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and lines[-1].startswith("error: ") and all(not ln.startswith("error: ") for ln in lines[:-1])
    return lines[-1]


def farm_on_terminal(cwd: Path, *args: str, streams: tuple[str, ...] = ("stdin", "stdout", "stderr"),
                     answer: str | None = None, columns: int = 80, timeout: float = 120,
                     **env: str) -> tuple[int, str, str, str]:
    """`farm args…` with `streams` on a pseudo-terminal (the others piped; stdin otherwise empty), `answer` typed
    on it. Returns the exit status, what the terminal showed, and the piped stdout and stderr."""
    import fcntl
    import pty
    import struct
    import termios
    import threading

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    ends: dict[str, int] = {name: slave if name in streams else subprocess.PIPE for name in ("stdout", "stderr")}
    stdin = slave if "stdin" in streams else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, *args], cwd=cwd, stdin=stdin,
                            env=isolated_env(cwd, COLUMNS=str(columns), **env), **ends)  # type: ignore[call-overload]
    os.close(slave)
    if answer is not None:
        os.write(master, answer.encode())
    shown: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: every end of the terminal was closed (the child exited)
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, err = proc.communicate(timeout=timeout)
    reader.join(timeout=10)
    os.close(master)
    text = b"".join(shown).decode("utf-8", "replace")
    return proc.returncode, text, (out or b"").decode("utf-8", "replace"), (err or b"").decode("utf-8", "replace")
