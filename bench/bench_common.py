"""What the Python benchmarks in bench/ share: the machine line every
table starts with."""
import os
import platform


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
