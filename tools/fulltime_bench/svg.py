"""SVG drawings of a benchmark run, written by hand (no plotting library on the machines)."""

W, H, L, R, T, B = 760, 340, 60, 70, 40, 40  # size and margins
P99_COLOR, RATE_COLOR = "#b03a2e", "#1f5f8b"


def polylines(points, x, idx, y, color):
    """One polyline per run of known values of points[idx] (a gap where a sample had none)."""
    runs, run = [], []
    for p in points:
        if p[idx] is None:
            if run:
                runs.append(run)
            run = []
            continue
        run.append(f"{x(p[0]):.1f},{y(p[idx]):.1f}")
    if run:
        runs.append(run)
    return "".join(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
                   f'points="{" ".join(r)}"/>' for r in runs)


def axes(x, yp, yr, tmax, pmax, rmax):
    parts = [f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="#444"/>',
             f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="{P99_COLOR}"/>',
             f'<line x1="{W - R}" y1="{T}" x2="{W - R}" y2="{H - B}" stroke="{RATE_COLOR}"/>']
    for i in range(0, 5):
        v = pmax * i / 4
        parts.append(f'<text x="{L - 6}" y="{yp(v) + 4:.1f}" text-anchor="end" '
                     f'fill="{P99_COLOR}">{v:.0f}</text>')
        v = rmax * i / 4
        parts.append(f'<text x="{W - R + 6}" y="{yr(v) + 4:.1f}" fill="{RATE_COLOR}">{v:.0f}</text>')
    for i in range(0, 6):
        t = tmax * i / 5
        label = f"{t:.0f}" if tmax >= 10 else f"{t:.1f}"
        parts.append(f'<text x="{x(t):.1f}" y="{H - B + 16}" text-anchor="middle">{label}</text>')
    parts.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 6}" text-anchor="middle">seconds from '
                 'the result\'s ack</text>')
    parts.append(f'<text x="12" y="{T - 8}" fill="{P99_COLOR}">placement p99 ms</text>')
    parts.append(f'<text x="{W - 12}" y="{T - 8}" text-anchor="end" fill="{RATE_COLOR}">settled '
                 'bets/s</text>')
    return parts


def hline(y, color, dash, label, label_x, anchor=""):
    return [f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="{color}" '
            f'stroke-dasharray="{dash}"/>',
            f'<text x="{label_x}" y="{y - 4:.1f}"{anchor} fill="{color}">{label}</text>']


def settlement(points, title, end, budget_ms, p99_before):
    """The settlement benchmark's run: points (t s from the ack, placement p99 ms or None,
    settled bets/s or None); the settlement interval up to `end` (s; the whole plot when None)
    shaded; the budget (ms, dashed) and the p99 before (ms, dotted) as lines when given."""
    tmax = max(p[0] for p in points) or 1
    pmax = max([p[1] for p in points if p[1] is not None] + [budget_ms or 0, p99_before or 0, 1]) * 1.15
    rmax = max([p[2] for p in points if p[2] is not None] + [1]) * 1.15

    def x(t):
        return L + (W - L - R) * t / tmax

    def yp(v):
        return H - B - (H - T - B) * v / pmax

    def yr(v):
        return H - B - (H - T - B) * v / rmax

    end = tmax if end is None else end
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             'font-family="sans-serif" font-size="11">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<rect x="{x(0):.1f}" y="{T}" width="{x(end) - x(0):.1f}" height="{H - T - B}" '
             'fill="#f1efe6"/>',
             f'<text x="{L}" y="18" font-size="13">{title}</text>',
             f'<text x="{x(0) + 4:.1f}" y="{T + 12}" fill="#777">settling</text>']
    parts += axes(x, yp, yr, tmax, pmax, rmax)
    if budget_ms:
        parts += hline(yp(budget_ms), P99_COLOR, "5,4", "budget", W - R - 4, ' text-anchor="end"')
    if p99_before:
        parts += hline(yp(p99_before), "#999", "2,3", "p99 before", L + 4)
    parts.append(polylines(points, x, 2, yr, RATE_COLOR))
    parts.append(polylines(points, x, 1, yp, P99_COLOR))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
