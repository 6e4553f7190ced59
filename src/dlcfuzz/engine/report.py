"""A static HTML report of a campaign: statistics, tests over time, findings with their reproducers."""

from __future__ import annotations

import html
import json
from pathlib import Path

from dlcfuzz.engine.store import Store


def _svg_series(rows: list[tuple], width: int = 640, height: int = 160, what: str = "tests") -> str:
    if len(rows) < 2:
        return "<p>(not enough samples for a plot)</p>"
    t_max = max(r[0] for r in rows) or 1.0
    n_max = max(r[1] for r in rows) or 1
    pts = " ".join(f"{10 + (width - 20) * r[0] / t_max:.1f},{height - 10 - (height - 20) * r[1] / n_max:.1f}" for r in rows)
    return (f'<svg width="{width}" height="{height}" role="img" aria-label="{what} over time">'
            f'<rect width="100%" height="100%" fill="#fafafa" stroke="#ccc"/>'
            f'<polyline fill="none" stroke="#2a6" stroke-width="2" points="{pts}"/>'
            f'<text x="12" y="16" font-size="11">{n_max} {what}</text>'
            f'<text x="{width - 60}" y="{height - 14}" font-size="11">{t_max:.0f} s</text></svg>')


def write_report(out: Path, store: Store) -> Path:
    totals = store.totals()
    findings = store.findings(distinct_only=True)
    dups = store.duplicate_counts()
    run = store.first_run() or {}
    rows = store.stats_rows()
    parts = [
        "<!doctype html><meta charset='utf-8'><title>dlcfuzz report</title>",
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}pre{background:#f4f4f4;padding:.6em;"
        "overflow:auto;max-height:24em}td,th{padding:.2em .6em;text-align:left}</style>",
        f"<h1>dlcfuzz campaign: {html.escape(str(run.get('compiler', '?')))}</h1>",
        f"<p>{html.escape(str(run.get('version', '')))}; strategy {html.escape(str(run.get('strategy', '')))}; "
        f"master seed {run.get('seed')}</p>",
        "<h2>Statistics</h2><table>",
        f"<tr><th>tests</th><td>{totals['tests']}</td></tr>",
    ]
    for k, v in sorted(totals["verdicts"].items(), key=lambda kv: str(kv[0])):
        parts.append(f"<tr><th>verdict {html.escape(str(k))}</th><td>{v}</td></tr>")
    for k, v in sorted(totals["unknowns"].items()):
        parts.append(f"<tr><th>unknown: {html.escape(k)}</th><td>{v}</td></tr>")
    if rows:
        last = rows[-1]
        rate = last[1] / last[0] if last[0] else 0.0
        parts.append(f"<tr><th>elapsed</th><td>{last[0]:.0f} s ({rate:.1f} tests/s)</td></tr>")
    parts.append(f"<tr><th>distinct findings</th><td>{len(findings)}</td></tr></table>")
    internal = store.internal_errors()
    if internal:
        parts.append(f"<h2>Internal errors ({len(internal)})</h2><p>Exceptions of dlcfuzz's own code; each test is "
                     "stored and replays with <code>dlcfuzz replay RUN --test N</code>.</p><table>"
                     "<tr><th>test</th><th>phase</th><th>error</th></tr>" + "".join(
                         f"<tr><td>{e['test_id']}</td><td>{html.escape(e['phase'])}</td>"
                         f"<td>{html.escape((e['error'] or '')[:200])}</td></tr>" for e in internal[:50]) + "</table>")
    strategy = run.get("strategy")
    if strategy:
        from dlcfuzz.errors import UsageError
        from dlcfuzz.strategies import get_strategy

        try:
            parts.append(get_strategy(strategy).report_section(store))
        except UsageError:  # a strategy of a newer or plug-in dlcfuzz: its section is left out
            pass
    parts.append("<h2>Tests over time</h2>" + _svg_series([(r[0], r[1]) for r in rows]))
    curve = store.coverage_curve()
    if curve:  # campaigns that measure coverage inside the compiler (tzer)
        last = curve[-1]
        wf = f"; well-formed mutants {100.0 * last[5] / last[4]:.1f}% of {last[4]}" if last[4] else ""
        parts.append(f"<h2>Coverage over time</h2><p>{last[2]} coverage items; {last[3]} valuable tests "
                     f"(valid and adding coverage){wf}</p>" + _svg_series([(r[0], r[2]) for r in curve], what="items"))
    parts.append("<h2>Findings</h2>")
    if not findings:
        parts.append("<p>No findings.</p>")
    for f in findings:
        configs = ", ".join(json.loads(f["configs"] or "[]"))
        parts.append(
            f"<h3 id='f{f['id']}'>#{f['id']} {html.escape(f['category'])} ({html.escape(configs)})</h3>"
            f"<p>signature <code>{f['signature']}</code>; seen {1 + dups.get(f['id'], 0)} times; "
            f"reduced {f['nodes']} &rarr; {f['reduced_nodes']} nodes; {html.escape(f['version'] or '')}</p>"
            f"<pre>{html.escape((f['detail'] or '')[:3000])}</pre>"
            f"<details><summary>reproducer (findings/{f['id']:04d}-{html.escape(f['category'])}/repro.py)</summary>"
            f"<pre>{html.escape(f['reproducer'] or '')}</pre></details>"
        )
    path = out / "report.html"
    path.write_text("\n".join(parts))
    return path
