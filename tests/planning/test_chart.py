"""`--chart`: the SVG and the PNG show each class's tiers stacked to scale, the demand line and the P95 line.

The PNG is read back with zlib and the PNG spec's own structure (signature, IHDR, IDAT with filter
bytes, IEND; W3C PNG 2nd edition sections 5 and 11), so a reader that follows the spec sees the picture.
"""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from gpu_platform.planning.chart import COLORS, LEFT, PANEL, TOP, WIDTH
from tests.planning.helpers import run_cli, write_demand

SVG = "{http://www.w3.org/2000/svg}"
DEMAND = {"demand": [{"team": "a", "class": "batch", "gpuModel": "L4", "p50": 50, "p95": 100, "interruptible": True}]}


def test_svg_stacks_the_tiers_to_scale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Batch P50 50, P95 100, interruptible: GPU k (one per node) is up P(d > k - 1) = 1 - (k - 1) / 100 of the time;
    uncommitted, part of its hours would run on Spot (up to the 30-GPU cap; a Spot hour saves c = 46.3 % of list, as in
    test_planner's worked case), so it pays at 35 % off where (1 - c) P(d > b) + c P(d > b + 30) >= 65 %: b <= 21,
    22 reserved; Spot takes 30 (the cap), on-demand the 48 between; the reserve line sits on top of the reserved band."""
    chart = tmp_path / "plan.svg"
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(write_demand(tmp_path, DEMAND)), "--chart", str(chart))
    assert code == 0, err
    root = ET.fromstring(chart.read_text())
    bands = {r.get("class"): float(r.get("height", 0)) for r in root.iter(f"{SVG}rect") if r.get("class")}
    assert bands["reserved"] / bands["spot"] == pytest.approx(22 / 30, rel=1e-3)
    assert bands["onDemand"] / bands["spot"] == pytest.approx(48 / 30, rel=1e-3)
    lines = {p.get("class"): p for p in root.iter(f"{SVG}polyline")}
    assert lines["p95"].get("stroke-dasharray")
    reserved = next(r for r in root.iter(f"{SVG}rect") if r.get("class") == "reserved")
    spot = next(r for r in root.iter(f"{SVG}rect") if r.get("class") == "spot")
    p95_y = float(lines["p95"].get("points", "").split()[0].split(",")[1])
    assert p95_y == pytest.approx(float(spot.get("y", 0)), abs=0.1)  # 22 + 48 + 30 = P95: the stack tops out at the P95 line
    reserve_y = float(lines["reserve"].get("points", "").split()[0].split(",")[1])
    assert reserve_y == pytest.approx(float(reserved.get("y", 0)), abs=0.1)
    label = next(t.text or "" for t in root.iter(f"{SVG}text") if (t.text or "").startswith("reserve 22"))
    assert "busy" in label and "above it" in label


def test_svg_shades_the_use_above_the_reserve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A batch history (Burstable: no N+1 spare, not interruptible): 1 GPU all the time, 3 GPUs for the last fifth.
    Break-even reserves 1 (GPUs 2-3 are busy 20 %); the use above it is shaded only over the last fifth of the time
    axis, up to 3 GPUs."""
    trace = tmp_path / "pods.csv"
    rows = [
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time",
        "a,1000,1024,1,1000,,Burstable,Running,0,1000,0",
        "b,1000,1024,1,1000,,Burstable,Running,800,1000,800",
        "c,1000,1024,1,1000,,Burstable,Running,800,1000,800",
    ]
    trace.write_text("\n".join(rows) + "\n")
    chart = tmp_path / "plan.svg"
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(trace), "--chart", str(chart))
    assert code == 0, err
    root = ET.fromstring(chart.read_text())
    above = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "above"]
    inner = WIDTH - LEFT - 20
    xs = sorted(float(r.get("x", 0)) - LEFT for r in above)
    assert xs[0] == pytest.approx(0.8 * inner, abs=1.0) and xs[-1] == pytest.approx(inner - 1, abs=1.0)
    reserve_y = float(next(p for p in root.iter(f"{SVG}polyline") if p.get("class") == "reserve").get("points", "").split()[0].split(",")[1])
    assert all(float(r.get("y", 0)) + float(r.get("height", 0)) == pytest.approx(reserve_y, abs=0.1) for r in above)


def read_png(data: bytes) -> tuple[int, int, bytes]:
    """(width, height, RGB rows without filter bytes) of an 8-bit RGB PNG with filter type 0 rows."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    idat = b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, kind
        chunks[kind] = body
        if kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert b"IEND" in chunks
    width, height, depth, color, _, _, _ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, color) == (8, 2)
    raw = zlib.decompress(idat)
    stride = width * 3 + 1
    assert len(raw) == stride * height
    assert all(raw[y * stride] == 0 for y in range(height))
    return width, height, b"".join(raw[y * stride + 1 : (y + 1) * stride] for y in range(height))


def test_png_shows_the_bands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = tmp_path / "plan.png"
    code, _, err = run_cli(capsys, "capacity", "plan", "--demand", str(write_demand(tmp_path, DEMAND)), "--chart", str(chart))
    assert code == 0, err
    width, height, px = read_png(chart.read_bytes())
    assert width == WIDTH and height > TOP + PANEL

    def pixel(x: int, y: int) -> tuple[int, int, int]:
        i = (y * width + x) * 3
        return px[i], px[i + 1], px[i + 2]

    def blended(name: str) -> tuple[int, int, int]:
        r, g, b = COLORS[name]
        return tuple(round(255 * 0.65 + c * 0.35) for c in (r, g, b))  # type: ignore[return-value]

    top = TOP + 30
    ymax = 100 * 1.1  # the panel's scale: the larger of P95, peak and the tiers, plus 10 %
    x = LEFT + 200
    assert pixel(x, round(top + PANEL - 20 / ymax * PANEL)) == blended("reserved")  # 20 GPUs: inside the reserved band (0-35)
    assert pixel(x, round(top + PANEL - 85 / ymax * PANEL)) == blended("spot")  # 85 GPUs: inside the Spot band (70-100)
    assert pixel(x, round(top + PANEL - 105 / ymax * PANEL)) == (255, 255, 255)  # above every tier
