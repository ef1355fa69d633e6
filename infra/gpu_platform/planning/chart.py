"""`--chart FILE.svg|png`: demand over time per class, the planned tiers stacked under it, the reserve line, the use above it and the P95 line.

One scene (rectangles, lines, text) is built as plain data and drawn twice: as SVG text, and as a PNG
rasterised here (zlib + a 3x5 pixel font), so the chart needs no plotting library.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from gpu_platform.errors import ConfigError, Problem
from gpu_platform.planning.demand import DemandGroup
from gpu_platform.planning.planner import GroupPlan, Plan

WIDTH, PANEL, LEFT, RIGHT, TOP, GAP = 900, 220, 70, 20, 40, 50
COLORS = {
    "reserved": (46, 125, 50),
    "onDemand": (25, 118, 210),
    "spot": (245, 124, 0),
    "demand": (33, 33, 33),
    "p95": (198, 40, 40),
    "reserve": (27, 94, 32),
    "above": (123, 31, 162),
    "axis": (120, 120, 120),
    "best-fit": (25, 118, 210),
    "fgd": (46, 125, 50),
}
TIERS = (("reserved", "reserved"), ("onDemand", "on-demand"), ("spot", "Spot"))


@dataclass(frozen=True)
class Rect:
    """A filled rectangle."""

    x: float
    y: float
    w: float
    h: float
    color: str
    legend: bool = False


@dataclass(frozen=True)
class Line:
    """A polyline; dashed for reference lines."""

    points: tuple[tuple[float, float], ...]
    color: str
    width: float = 1.5
    dashed: bool = False


@dataclass(frozen=True)
class Text:
    """A label anchored at its left baseline."""

    x: float
    y: float
    text: str
    color: str = "axis"


Shape = Rect | Line | Text


def _envelope(group: DemandGroup, columns: int) -> list[float] | None:
    """Demand's maximum per pixel column (keeps peaks that a plain sample would drop)."""
    s = group.series
    if s is None or s.window <= 0:
        return None
    out = [0.0] * columns
    scale = columns / s.window
    for t0, t1, v in s.segments():
        a = int((t0 - s.start) * scale)
        b = max(a + 1, min(columns, int((t1 - s.start) * scale + 0.999999)))
        for i in range(a, b):
            out[i] = max(out[i], v / 1000)
    return out


def panel(demand: DemandGroup, plan: GroupPlan, top: float) -> list[Shape]:
    """One class: tier bands, demand (or its P50/P95 when declared), the P95 line, labels."""
    inner = WIDTH - LEFT - RIGHT
    env = _envelope(demand, inner)
    ymax = max(plan.total, demand.peak, demand.p95, 1.0) * 1.1

    def y(v: float) -> float:
        return top + PANEL - v / ymax * PANEL

    shapes: list[Shape] = [
        Text(
            LEFT,
            top - 8,
            f"{plan.workload_class} ({plan.catalog_gpu or 'any'}): reserved {plan.reserved}, on-demand {plan.on_demand}, Spot {plan.spot} GPUs",
            "demand",
        )
    ]
    base = 0.0
    for key, _ in TIERS:
        n = {"reserved": plan.reserved, "onDemand": plan.on_demand, "spot": plan.spot}[key]
        if n:
            shapes.append(Rect(LEFT, y(base + n), inner, y(base) - y(base + n), key))
        base += n
    reserve = plan.reserved
    if env is not None:
        # the use above the reserve, column by column: what on-demand and Spot are billed for
        shapes += [Rect(LEFT + i, y(v), 1, y(reserve) - y(v), "above") for i, v in enumerate(env) if v > reserve]
        pts = [(LEFT + i + 0.5, y(v)) for i, v in enumerate(env)]
        shapes.append(Line(tuple(pts), "demand"))
    else:
        shapes.append(Line(((LEFT, y(demand.p50)), (LEFT + inner, y(demand.p50))), "demand"))
    shapes.append(Line(((LEFT, y(reserve)), (LEFT + inner, y(reserve))), "reserve", 2.0))
    used = "" if plan.reserved_utilization is None else f", busy {plan.reserved_utilization:.0%}"
    shapes.append(Text(LEFT + 6, y(reserve) - 4, f"reserve {reserve}{used}; above it {plan.mean_above_reserve:.1f} GPUs on average", "reserve"))
    shapes.append(Line(((LEFT, y(demand.p95)), (LEFT + inner, y(demand.p95))), "p95", 1.5, True))
    shapes.append(Text(LEFT + inner - 90, y(demand.p95) - 4, f"P95 {demand.p95:g}", "p95"))
    shapes.append(Line(((LEFT, top), (LEFT, top + PANEL), (LEFT + inner, top + PANEL)), "axis", 1.0))
    for frac in (0.0, 0.5, 1.0):
        v = ymax / 1.1 * frac
        shapes.append(Text(8, y(v) + 4, f"{v:.0f}"))
    return shapes


def scene(plan: Plan) -> tuple[list[Shape], int]:
    """Every shape of the chart and its height: one panel per class, legend on top."""
    shapes: list[Shape] = []
    x = LEFT
    for key, name in (*TIERS, ("reserve", "reserve"), ("above", "use above"), ("demand", "demand"), ("p95", "P95")):
        shapes += [Rect(x, 10, 12, 12, key, legend=True), Text(x + 16, 21, name)]
        x += 105
    top = TOP + 30
    for d, p in zip(plan.demand.totals, plan.totals, strict=True):
        shapes += panel(d, p, top)
        top += PANEL + GAP
    span = ""
    if plan.demand.window:
        days = (plan.demand.window[1] - plan.demand.window[0]) / 86400
        span = f"time: {days:.0f} days of {plan.demand.kind}"
    else:
        span = "declared demand: line is P50, dashed line is P95"
    shapes.append(Text(LEFT, top - GAP + 30, span))
    return shapes, int(top)


def _hex(color: str) -> str:
    r, g, b = COLORS[color]
    return f"#{r:02x}{g:02x}{b:02x}"


def to_svg(shapes: list[Shape], height: int) -> str:
    """The scene as a standalone SVG document."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        'font-family="sans-serif" font-size="12">'
    ]
    out.append(f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>')
    for s in shapes:
        if isinstance(s, Rect):
            out.append(
                f'<rect class="{"legend-" if s.legend else ""}{s.color}" x="{s.x:.1f}" y="{s.y:.1f}" width="{s.w:.1f}" height="{s.h:.1f}" '
                f'fill="{_hex(s.color)}" fill-opacity="0.35"/>'
            )
        elif isinstance(s, Line):
            pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in s.points)
            dash = ' stroke-dasharray="6 4"' if s.dashed else ""
            out.append(f'<polyline class="{s.color}" points="{pts}" fill="none" stroke="{_hex(s.color)}" stroke-width="{s.width}"{dash}/>')
        else:
            out.append(f'<text x="{s.x:.1f}" y="{s.y:.1f}" fill="{_hex(s.color)}">{escape(s.text)}</text>')
    out.append("</svg>")
    return "\n".join(out)


# 3x5 pixel font: each glyph is five rows of three bits.
FONT = {
    "0": "111101101101111",
    "1": "010110010010111",
    "2": "111001111100111",
    "3": "111001111001111",
    "4": "101101111001001",
    "5": "111100111001111",
    "6": "111100111101111",
    "7": "111001001001001",
    "8": "111101111101111",
    "9": "111101111001111",
    "A": "010101111101101",
    "B": "110101110101110",
    "C": "011100100100011",
    "D": "110101101101110",
    "E": "111100110100111",
    "F": "111100110100100",
    "G": "011100101101011",
    "H": "101101111101101",
    "I": "111010010010111",
    "J": "001001001101010",
    "K": "101101110101101",
    "L": "100100100100111",
    "M": "101111111101101",
    "N": "110101101101101",
    "O": "010101101101010",
    "P": "110101110100100",
    "Q": "010101101110011",
    "R": "110101110101101",
    "S": "011100010001110",
    "T": "111010010010010",
    "U": "101101101101111",
    "V": "101101101101010",
    "W": "101101111111101",
    "X": "101101010101101",
    "Y": "101101010010010",
    "Z": "111001010100111",
    " ": "000000000000000",
    ".": "000000000000010",
    ",": "000000000010100",
    ":": "000010000010000",
    "-": "000000111000000",
    "(": "010100100100010",
    ")": "010001001001010",
    "/": "001001010100100",
    "%": "101001010100101",
    "$": "011110010011110",
    "_": "000000000000111",
    "=": "000111000111000",
    "+": "000010111010000",
}


class Raster:
    """An RGB pixel buffer with the few drawing operations the scene needs."""

    def __init__(self, width: int, height: int):
        self.width, self.height = width, height
        self.px = bytearray(b"\xff" * (width * height * 3))

    def dot(self, x: int, y: int, rgb: tuple[int, int, int], alpha: float = 1.0) -> None:
        """Blend one pixel."""
        if 0 <= x < self.width and 0 <= y < self.height:
            i = (y * self.width + x) * 3
            for k in range(3):
                self.px[i + k] = round(self.px[i + k] * (1 - alpha) + rgb[k] * alpha)

    def rect(self, r: Rect) -> None:
        """Fill a rectangle (translucent, like the SVG)."""
        for yy in range(round(r.y), round(r.y + r.h)):
            for xx in range(round(r.x), round(r.x + r.w)):
                self.dot(xx, yy, COLORS[r.color], 0.35)

    def line(self, ln: Line) -> None:
        """Draw a polyline with axis-aligned steps (every segment is horizontal, vertical, or a step between columns)."""
        rgb = COLORS[ln.color]
        for (x0, y0), (x1, y1) in zip(ln.points, ln.points[1:], strict=False):
            steps = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
            for k in range(steps + 1):
                if ln.dashed and (k // 5) % 2:
                    continue
                t = k / steps
                xx, yy = round(x0 + (x1 - x0) * t), round(y0 + (y1 - y0) * t)
                self.dot(xx, yy, rgb)
                self.dot(xx, yy + 1, rgb)

    def text(self, t: Text) -> None:
        """Draw text with the 3x5 font at scale 2 (the baseline is the glyphs' bottom)."""
        rgb = COLORS[t.color]
        x = round(t.x)
        top = round(t.y) - 10
        for ch in t.text.upper():
            glyph = FONT.get(ch, FONT[" "])
            for i, bit in enumerate(glyph):
                if bit == "1":
                    gx, gy = x + (i % 3) * 2, top + (i // 3) * 2
                    for dx in (0, 1):
                        for dy in (0, 1):
                            self.dot(gx + dx, gy + dy, rgb)
            x += 8

    def png(self) -> bytes:
        """PNG bytes: signature, IHDR (8-bit RGB), one zlib IDAT, IEND."""

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        stride = self.width * 3
        raw = b"".join(b"\x00" + bytes(self.px[y * stride : (y + 1) * stride]) for y in range(self.height))
        ihdr = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def to_png(shapes: list[Shape], height: int) -> bytes:
    """The scene rasterised to PNG."""
    r = Raster(WIDTH, height)
    for s in shapes:
        if isinstance(s, Rect):
            r.rect(s)
    for s in shapes:
        if isinstance(s, Line):
            r.line(s)
        elif isinstance(s, Text):
            r.text(s)
    return r.png()


def curves_scene(curves: dict[str, list[tuple[int, float]]], gpus: int, low: int = 50) -> tuple[list[Shape], int]:
    """Allocated share of the cluster's GPUs against arrived demand, one line per placement policy, from `low` % up."""
    height, plot_w, plot_h, top = 360, WIDTH - LEFT - RIGHT, 260, TOP + 20
    x_max = max((m for c in curves.values() for m, _ in c), default=130)

    def at(arrived: float, allocated: float) -> tuple[float, float]:
        return LEFT + plot_w * (arrived - low) / (x_max - low), top + plot_h * (100 - allocated) / (100 - low)

    shapes: list[Shape] = []
    x = LEFT
    for name in curves:
        shapes += [Rect(x, 10, 12, 12, name, legend=True), Text(x + 16, 21, name)]
        x += 105
    shapes += [Line(((x, 16), (x + 24, 16)), "axis", dashed=True), Text(x + 30, 21, "everything arrived is placed")]
    shapes.append(Line((at(low, low), at(low, 100), at(low, low), at(x_max, low)), "axis"))
    for pct in range(low, 101, 10):
        px, py = at(low, pct)
        shapes.append(Text(px - 34, py + 4, f"{pct}%"))
    for arrived in range(low, x_max + 1, 10):
        px, py = at(arrived, low)
        shapes.append(Text(px - 10, py + 16, f"{arrived}%"))
    shapes.append(Line((at(low, low), at(100, 100), at(x_max, 100)), "axis", dashed=True))
    for name, points in curves.items():
        shapes.append(Line(tuple(at(m, v) for m, v in points if m >= low and v >= low), name, width=2))
    caption = f"x: GPU demand arrived, % of the cluster's {gpus:,} GPUs; y: GPUs allocated, % (from {low}%)"
    shapes.append(Text(LEFT, height - 12, caption))
    return shapes, height


def write_scene(shapes: list[Shape], height: int, path: Path) -> None:
    """Write a scene as SVG or PNG by the file's suffix."""
    check_chart_path(path)
    try:
        if path.suffix.lower() == ".svg":
            path.write_text(to_svg(shapes, height), encoding="utf-8")
        else:
            path.write_bytes(to_png(shapes, height))
    except OSError as exc:
        raise ConfigError([Problem(str(path), "--chart", f"cannot be written: {exc.strerror}", "allowed: a writable path")]) from None


def check_chart_path(path: Path) -> None:
    """A chart file name ends in .svg or .png, in a folder that exists (checked before any file is written)."""
    suffix = path.suffix.lower()
    if suffix not in (".svg", ".png"):
        allowed = "allowed: a file name ending in .svg or .png"
        raise ConfigError([Problem(str(path), "--chart", f"unknown chart format '{suffix or path.name}'", allowed)])
    if not path.parent.is_dir():
        raise ConfigError([Problem(str(path), "--chart", f"folder {path.parent} does not exist", "allowed: a file in an existing folder")])


def write_chart(plan: Plan, path: Path) -> None:
    """Write the plan's chart as SVG or PNG by the file's suffix."""
    shapes, height = scene(plan)
    write_scene(shapes, height, path)
