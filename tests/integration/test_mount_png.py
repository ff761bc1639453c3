"""The .png views through a real mount (docs/mount.md, "Pictures"): 2-D
datasets of several dtypes and 2-D slices of a stack read as PNG files,
decoded here (chunk by chunk with zlib, every CRC checked) and with Pillow,
and compared pixel by pixel with the documented scale (the 1st and 99th
percentiles of the finite values, NaN/-inf/missing 0, inf 255); `file`,
`cp` and `cat` see a valid PNG; the colormap attribute; a picture follows
writes to its dataset; pictures that are refused, with their errno and log
line; a large picture is sampled and streamed in bounded memory."""
import errno
import os
import re
import struct
import subprocess
import zlib

import numpy as np
import pytest

from conftest import run, slab
from mounting import container, make_dataset, make_empty_dataset, mounter  # noqa: F401

try:
    from PIL import Image
except ImportError:  # Debian python3-pil (install_deps.sh); the own decoder still runs
    Image = None

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 3: 1, 6: 4}  # PNG colour type -> samples a pixel


def decode_png(data):
    """A PNG of 8-bit samples, not interlaced, decoded without a library:
    (header fields, pixels as an array (H, W) or (H, W, C) of levels or
    palette indices, palette as (256, 3) or None, tEXt chunks)."""
    assert data[:8] == SIGNATURE, data[:16]
    pos, idat, palette, text, ihdr = 8, [], None, {}, None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind}"
        pos += 12 + length
        if kind == b"IHDR":
            w, h, depth, color, comp, filt, interlace = struct.unpack(">IIBBBBB", body)
            ihdr = dict(width=w, height=h, depth=depth, color=color, interlace=interlace)
            assert depth == 8 and interlace == 0 and comp == 0 and filt == 0
        elif kind == b"PLTE":
            palette = np.frombuffer(body, dtype=np.uint8).reshape(-1, 3)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            text[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"IEND":
            break
    assert pos == len(data), "bytes after IEND"
    c = CHANNELS[ihdr["color"]]
    w, h = ihdr["width"], ihdr["height"]
    raw = zlib.decompress(b"".join(idat))
    stride = w * c
    assert len(raw) == h * (stride + 1)
    out = np.zeros((h, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 255
        elif f == 1:  # each byte plus the one a pixel to its left: a running sum per channel
            cur = (np.cumsum(line.reshape(w, c), axis=0).reshape(stride)) & 255
        else:  # Sub, Average, Paeth depend on the pixel to the left: byte by byte
            for i in range(stride):
                a = cur[i - c] if i >= c else 0
                b = prev[i]
                if f == 3:
                    p = (a + b) // 2
                elif f == 4:
                    cc = prev[i - c] if i >= c else 0
                    pa, pb, pc = abs(b - cc), abs(a - cc), abs(a + b - 2 * cc)
                    p = a if pa <= pb and pa <= pc else (b if pb <= pc else cc)
                else:
                    raise AssertionError(f"filter type {f}")
                cur[i] = (line[i] + p) & 255
        out[y] = cur
        prev = cur
    pixels = out.reshape(h, w, c) if c > 1 else out
    return ihdr, pixels, palette, text


def span(text):
    """(lo, hi) as the picture's Description states them."""
    m = re.search(r"span \[(\S+), (\S+)\]", text["Description"])
    assert m, text
    return float(m.group(1)), float(m.group(2))


def levels(values, lo, hi, missing=()):
    """The documented scale, in float64 as the daemon computes it."""
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        t = np.floor((v - lo) / (hi - lo) * 255 + 0.5) if hi != lo else np.zeros_like(v)
    out = np.clip(np.nan_to_num(t, nan=0, posinf=255, neginf=0), 0, 255)
    out = np.where(v <= lo, 0, np.where(v >= hi, 255, out))
    bad = np.isnan(v) | np.isin(v, list(missing))
    return np.where(bad, 0, out).astype(np.uint8)


def check_picture(data, values, missing=()):
    """Decodes the PNG two ways and compares it with the documented scale of
    `values` (2-D)."""
    ihdr, px, palette, text = decode_png(data)
    assert (ihdr["height"], ihdr["width"]) == values.shape and ihdr["color"] == 0 and palette is None
    v = values.astype(np.float64)
    finite = v[np.isfinite(v) & ~np.isin(v, list(missing))]
    lo, hi = np.percentile(finite, [1, 99])
    slo, shi = span(text)
    assert slo == pytest.approx(lo, rel=1e-12, abs=1e-300) and shi == pytest.approx(hi, rel=1e-12, abs=1e-300)
    assert "the whole picture" in text["Description"]
    # Exact against the stated range, and at most a level off numpy's.
    assert np.array_equal(px, levels(v, slo, shi, missing))
    assert np.abs(px.astype(int) - levels(v, lo, hi, missing).astype(int)).max() <= 1
    if Image is not None:
        import io
        im = Image.open(io.BytesIO(data))
        assert im.mode == "L" and im.size == (values.shape[1], values.shape[0])
        assert np.array_equal(np.asarray(im), px)
    return px


def test_pictures_of_each_dtype_follow_the_documented_scale(container, mounter):
    rng = np.random.default_rng(1)
    u1 = rng.integers(0, 40, size=(48, 64)).astype("<u1")  # a dim picture gets stretched
    i2 = (rng.normal(0, 3000, size=(30, 50))).astype("<i2")
    f4 = rng.normal(280, 15, size=(40, 60)).astype("<f4")
    f4[3, :7] = np.nan
    f4[5, 5] = np.inf
    f4[6, 6] = -np.inf
    f8 = np.outer(np.linspace(-1, 1, 33), np.linspace(0, 5, 47)) ** 3
    f8[0, 0] = -1e300  # an outlier the percentiles leave out
    make_dataset(container, "/detector/u1", u1, (16, 16))
    make_dataset(container, "/detector/i2", i2, (7, 50))
    make_dataset(container, "/climate/temperature", f4, (40, 60))
    make_dataset(container, "/climate/f8", f8, (10, 10))
    m = mounter(container, "-o", "ro")
    for path, a in (("detector/u1", u1), ("detector/i2", i2), ("climate/temperature", f4), ("climate/f8", f8)):
        data = open(f"{m.path}/{path}.png", "rb").read()
        assert os.path.getsize(f"{m.path}/{path}.png") == len(data)
        px = check_picture(data, a)
        assert px.min() == 0 and px.max() == 255, path
    # NaN and -inf are black, inf white.
    _, px, _, _ = decode_png(open(m / "climate" / "temperature.png", "rb").read())
    assert (px[3, :7] == 0).all() and px[5, 5] == 255 and px[6, 6] == 0
    # Views are not listed.
    assert sorted(os.listdir(m / "climate")) == ["f8", "temperature"]
    assert m.unmount() == 0


def test_slices_of_a_stack_are_pictures(container, mounter):
    frames = (np.arange(4 * 20 * 30, dtype="<u2").reshape(4, 20, 30) * 37) % 1009
    make_dataset(container, "/detector/frames", frames, (1, 20, 30))
    m = mounter(container)
    check_picture(open(f"{m.path}/detector/frames[3].png", "rb").read(), frames[3])
    check_picture(open(f"{m.path}/detector/frames[-1].png", "rb").read(), frames[-1])
    check_picture(open(f"{m.path}/detector/frames[1, ::2, 5:].png", "rb").read(), frames[1, ::2, 5:])
    check_picture(open(f"{m.path}/detector/frames[:, 4].png", "rb").read(), frames[:, 4])  # (4, 1, 30)
    # The stack itself has no picture.
    with pytest.raises(OSError) as e:
        os.stat(m / "detector" / "frames.png")
    assert e.value.errno == errno.ENOENT
    assert "lookup /detector/frames.png refused (ENOENT)" in m.log()
    assert "has no picture" in m.log()
    assert m.unmount() == 0


def test_file_cp_and_cat_see_a_png(container, mounter, tmp_path):
    a = np.linspace(0, 1, 64 * 48, dtype="<f8").reshape(48, 64)
    make_dataset(container, "/img", a, (16, 16))
    m = mounter(container)
    p = m / "img.png"
    out = run("file", "-b", p).stdout
    assert out.startswith("PNG image data, 64 x 48, 8-bit grayscale, non-interlaced"), out
    st = os.stat(p)
    assert st.st_mode & 0o777 == 0o444 and st.st_size > 0
    run("cp", p, tmp_path / "copy.png")
    cp = subprocess.run(["cat", str(p)], capture_output=True, check=True)
    data = open(p, "rb").read()
    assert (tmp_path / "copy.png").read_bytes() == data == cp.stdout and len(data) == st.st_size
    assert run("file", "-b", tmp_path / "copy.png").stdout == out
    check_picture(data, a)
    # Pieces at any offset, as an image viewer reads them.
    with open(p, "rb") as f:
        f.seek(len(data) // 3)
        assert f.read(100) == data[len(data) // 3:len(data) // 3 + 100]
    # Read-only on a read-write mount.
    for flags in (os.O_WRONLY, os.O_RDWR):
        with pytest.raises(OSError) as e:
            os.open(p, flags)
        assert e.value.errno == errno.EACCES
    with pytest.raises(OSError) as e:
        os.truncate(p, 0)
    assert e.value.errno in (errno.EACCES, errno.EINVAL)
    assert m.unmount() == 0


def test_colormap_attribute(container, mounter):
    a = np.arange(16 * 16, dtype="<u1").reshape(16, 16)
    make_dataset(container, "/ramp", a, (16, 16))
    m = mounter(container)
    gray = open(m / "ramp.png", "rb").read()
    run("setfattr", "-n", "user.colormap", "-v", "viridis", m / "ramp")
    data = open(m / "ramp.png", "rb").read()
    assert data != gray  # the attribute changed the picture
    assert "8-bit colormap" in run("file", "-b", m / "ramp.png").stdout
    ihdr, idx, palette, text = decode_png(data)
    assert ihdr["color"] == 3 and palette.shape == (256, 3)
    assert "colormap viridis" in text["Description"]
    lo, hi = np.percentile(a.astype(float), [1, 99])
    assert np.array_equal(idx, levels(a, lo, hi))
    assert tuple(palette[0]) == (0x44, 0x01, 0x54) and tuple(palette[255]) == (0xfd, 0xe7, 0x25)
    if Image is not None:
        rgb = np.asarray(Image.open(m / "ramp.png").convert("RGB"))
        assert np.array_equal(rgb, palette[idx])
    run("setfattr", "-n", "user.colormap", "-v", "viridis_r", m / "ramp")
    _, _, rev, _ = decode_png(open(m / "ramp.png", "rb").read())
    assert np.array_equal(rev, palette[::-1])
    run("setfattr", "-n", "user.colormap", "-v", "rainbow", m / "ramp")
    with pytest.raises(OSError) as e:
        os.stat(m / "ramp.png")
    assert e.value.errno == errno.EINVAL
    assert "names no colormap" in m.log() and "viridis" in m.log()
    assert m.unmount() == 0


def test_fill_value_is_missing(container, mounter):
    a = np.arange(20 * 20, dtype="<i2").reshape(20, 20)
    a[:8] = -9999  # 40 % land: without _FillValue the 1st percentile would be -9999
    make_dataset(container, "/sst", a, (20, 20))
    slab("attr", container, "/sst", "_FillValue", "--dtype", "i2", "--", "-9999")
    m = mounter(container)
    px = check_picture(open(m / "sst.png", "rb").read(), a, missing=(-9999,))
    assert (px[:8] == 0).all() and px[8:].max() == 255 and np.count_nonzero(px[8:]) > 200
    assert m.unmount() == 0


def test_picture_follows_writes(container, mounter):
    a = np.zeros((10, 12), dtype="<u1")
    a[:, 6:] = 100
    make_dataset(container, "/w", a, (10, 12))
    m = mounter(container)
    held = open(m / "w.png", "rb")  # an open file keeps the picture it opened
    first = held.read()
    check_picture(first, a)
    with open(m / "w", "r+b") as f:  # the left half becomes the brightest
        for r in range(10):
            f.seek(r * 12)
            f.write(bytes([200] * 6))
    a[:, :6] = 200
    with open(m / "w.png", "rb") as f:
        second = f.read()
        assert os.fstat(f.fileno()).st_size == len(second)
    assert second != first
    px = check_picture(second, a)
    assert (px[:, :6] == 255).all() and (px[:, 6:] == 0).all()
    held.seek(0)
    assert held.read() == first
    held.close()
    assert m.unmount() == 0


def test_readers_at_once_see_one_picture(container, mounter):
    a = np.random.default_rng(9).normal(size=(700, 900)).astype("<f4")
    make_dataset(container, "/noise", a, (100, 100))
    m = mounter(container)
    # Eight readers start together: one encodes, the others wait for it.
    procs = [subprocess.Popen(["cat", str(m / "noise.png")], stdout=subprocess.PIPE) for _ in range(8)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(set(outs)) == 1
    check_picture(outs[0], a)
    assert m.unmount() == 0


def test_a_real_file_named_like_a_picture(container, mounter, tmp_path):
    make_dataset(container, "/t", np.arange(12, dtype="<u1").reshape(3, 4), (3, 4))
    make_dataset(container, "/line", np.arange(5, dtype="<u1"), (5,))
    m = mounter(container)
    plot = open(m / "t.png", "rb").read()  # any PNG file
    (tmp_path / "plot.png").write_bytes(plot[::-1])
    # While t has a picture, t.png is that view: cp cannot write it...
    assert run("cp", tmp_path / "plot.png", m / "t.png", check=False).returncode != 0
    # ...but a rename onto the name makes a real file, which wins.
    run("cp", tmp_path / "plot.png", m / "t.tmp")
    os.rename(m / "t.tmp", m / "t.png")
    assert open(m / "t.png", "rb").read() == plot[::-1]
    assert sorted(os.listdir(m.path)) == ["line", "t", "t.png"]
    # A 1-D dataset has no picture: its .png name is free.
    run("cp", tmp_path / "plot.png", m / "line.png")
    assert open(m / "line.png", "rb").read() == plot[::-1]
    assert m.unmount() == 0


def test_refused_pictures(container, mounter):
    make_dataset(container, "/line", np.arange(100, dtype="<f4"), (100,))
    make_empty_dataset(container, "/wide", "<u1", (2, 1 << 31), (1, 1 << 20))
    make_empty_dataset(container, "/huge", "<u1", (40000, 40000), (1000, 1000))
    make_empty_dataset(container, "/ok", "<u1", (40000, 40000), (1000, 1000))
    m = mounter(container)
    for name, code in (("line.png", errno.ENOENT), ("wide.png", errno.EFBIG), ("huge.png", errno.EFBIG),
                       ("line[3].png", errno.ENOENT), ("ok[0:0].png", errno.EINVAL)):
        with pytest.raises(OSError) as e:
            os.stat(f"{m.path}/{name}")
        assert e.value.errno == code, name
    log = m.log()
    assert "lookup /line.png refused (ENOENT)" in log and "has no picture" in log
    assert "lookup /wide.png refused (EFBIG)" in log and "2147483648 x 2 pixels is too large" in log
    assert "lookup /huge.png refused (EFBIG)" in log
    # A slice of the refused one is a picture (every element the fill value: black).
    _, px, _, _ = decode_png(open(f"{m.path}/ok[::100, ::100].png", "rb").read())
    assert px.shape == (400, 400) and not px.any()
    assert m.unmount() == 0


def test_large_picture_is_sampled_and_streamed(container, mounter):
    """A 4096 x 4096 f4 picture (64 MiB of values; its PNG ~16 MiB, in a
    temporary file): the range comes from a sample, and the daemon's memory
    stays far below either size."""
    rng = np.random.default_rng(5)
    a = rng.normal(0, 1, size=(4096, 4096)).astype("<f4")
    make_dataset(container, "/big", a, (256, 256))
    m = mounter(container, "-o", "cache_size=4M")
    data = open(m / "big.png", "rb").read()
    if Image is not None:  # the own decoder takes a minute on 16 MiB of noise
        import io
        im = Image.open(io.BytesIO(data))
        px, text = np.asarray(im), im.info
    else:
        _, px, _, text = decode_png(data)
    assert px.shape == a.shape
    assert "a sample" in text["Description"]
    lo, hi = span(text)
    want_lo, want_hi = np.percentile(a, [1, 99])
    assert abs(lo - want_lo) < 0.05 and abs(hi - want_hi) < 0.05
    assert np.array_equal(px[::37], levels(a[::37], lo, hi))
    with open(f"/proc/{m.proc.pid}/status") as f:
        hwm_kib = int(next(line for line in f if line.startswith("VmHWM")).split()[1])
    assert hwm_kib < 48 * 1024, f"daemon peak RSS {hwm_kib} KiB for a 64 MiB dataset's picture"
    assert m.unmount() == 0
