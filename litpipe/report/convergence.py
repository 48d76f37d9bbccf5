"""The MAIS convergence figures (`litpipe.evaluation.convergence.convergence_report`) as a
Markdown table and an SVG plot. The SVG is written by hand (no plotting dependency) and stands
alone.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from litpipe.schemas import ConvergenceReport

# The plot's canvas and the margins that hold its axes' labels, in SVG user units (pixels).
_WIDTH, _HEIGHT = 640, 360
_LEFT, _RIGHT, _TOP, _BOTTOM = 60, 20, 40, 50
_Y_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
# The first and last points sit this far inside the axes, so that no marker sits on one.
_X_PAD = 20


def _number(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def render_markdown(report: ConvergenceReport) -> str:
    """The convergence table, then the mean accuracy and ACU accuracy at each iteration."""
    caps = ", ".join(str(cap) for cap in report.max_iterations) or "n/a"
    lines = [
        "| runs | approved | approved share | approved in one iteration | mean iterations "
        "(approved) | variance of iterations (approved) | max iterations |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {report.runs} | {report.approved} | {report.approved_share:.1%} | "
        f"{report.single_iteration} ({report.single_iteration_share:.1%}) | "
        f"{_number(report.mean_iterations)} | {_number(report.variance_iterations)} | {caps} |",
        "",
        "| iteration | runs reaching it | mean accuracy | mean ACU accuracy |",
        "|---:|---:|---:|---:|",
        *(
            f"| {row.iteration} | {row.runs} | {row.mean_accuracy:.3f} | "
            f"{_number(row.mean_acu_accuracy, 3)} |"
            for row in report.accuracy_by_iteration
        ),
    ]
    return "\n".join(lines) + "\n"


def render_svg(
    report: ConvergenceReport, title: str = "MAIS: mean judge accuracy per iteration"
) -> str:
    """A line plot of the mean accuracy at each iteration (0 to 1), one marked point per
    iteration, each with a tooltip giving its value and the runs that reached it."""
    rows = report.accuracy_by_iteration
    plot_width = _WIDTH - _LEFT - _RIGHT
    plot_height = _HEIGHT - _TOP - _BOTTOM
    last = max(len(rows), 1)

    def x(iteration: int) -> float:
        # One iteration alone sits in the middle; more spread over the width.
        if last == 1:
            return _LEFT + plot_width / 2
        return _LEFT + _X_PAD + (plot_width - 2 * _X_PAD) * (iteration - 1) / (last - 1)

    def y(accuracy: float) -> float:
        return _TOP + plot_height * (1 - accuracy)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{_WIDTH}" height="{_HEIGHT}" fill="white"/>',
        f'<text x="{_WIDTH / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    for tick in _Y_TICKS:
        parts.append(
            f'<line class="grid" x1="{_LEFT}" y1="{y(tick):.1f}" x2="{_WIDTH - _RIGHT}" '
            f'y2="{y(tick):.1f}" stroke="#ddd"/>'
        )
        parts.append(
            f'<text x="{_LEFT - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.2f}</text>'
        )
    parts += [
        f'<line x1="{_LEFT}" y1="{_TOP + plot_height}" x2="{_WIDTH - _RIGHT}" '
        f'y2="{_TOP + plot_height}" stroke="black"/>',
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_height}" stroke="black"/>',
        f'<text x="{_LEFT + plot_width / 2}" y="{_HEIGHT - 12}" text-anchor="middle">'
        "iteration</text>",
        f'<text x="16" y="{_TOP + plot_height / 2}" text-anchor="middle" '
        f'transform="rotate(-90 16 {_TOP + plot_height / 2})">mean accuracy</text>',
    ]
    for row in rows:
        parts.append(
            f'<text x="{x(row.iteration):.1f}" y="{_TOP + plot_height + 18}" '
            f'text-anchor="middle">{row.iteration}</text>'
        )
    if rows:
        points = " ".join(f"{x(r.iteration):.1f},{y(r.mean_accuracy):.1f}" for r in rows)
        parts.append(f'<polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    for row in rows:
        parts.append(
            f'<circle class="point" cx="{x(row.iteration):.1f}" cy="{y(row.mean_accuracy):.1f}" '
            f'r="4" fill="#1f77b4" data-iteration="{row.iteration}" '
            f'data-accuracy="{row.mean_accuracy:.4f}" data-runs="{row.runs}">'
            f"<title>iteration {row.iteration}: mean accuracy {row.mean_accuracy:.3f} over "
            f"{row.runs} runs</title></circle>"
        )
    if not rows:
        parts.append(
            f'<text x="{_WIDTH / 2}" y="{_HEIGHT / 2}" text-anchor="middle">no runs</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
