"""What the Python benchmarks in bench/ share: the machine line every
table starts with, and a slabfs mount for the length of a with-block."""
import os
import platform
import subprocess
import time


def machine():
    """CPU model, cores and kernel, for the first line of a table."""
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, kernel {platform.release()}"


class Mount:
    """slabfs CONTAINER MOUNTPOINT -f -o OPTION...; close() unmounts."""

    def __init__(self, slabfs, container, mountpoint, options):
        self.mountpoint = mountpoint
        args = [slabfs, container, mountpoint, "-f"]
        for o in options:
            args += ["-o", o]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(400):
            if os.path.ismount(mountpoint):
                return
            if self.proc.poll() is not None:
                raise RuntimeError("slabfs exited before mounting")
            time.sleep(0.05)
        self.close()
        raise RuntimeError("slabfs did not mount")

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mountpoint], capture_output=True)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
