"""A static HTML report of a campaign: statistics, charts over time (findings and distinct clusters,
tests/s, coverage), unknown verdicts by reason, per-operator and per-dtype counts, then the root-cause
clusters, each with its findings, the reproducer and the text of an upstream issue.

Nothing in it names a path of the machine that ran the campaign or a frame of dlcfuzz's own code
(`engine.scrub`)."""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from dlcfuzz.engine.clusters import Cluster, FindingFacts, finding_folder, run_clusters
from dlcfuzz.engine.known import KnownBug, Register
from dlcfuzz.engine.scrub import scrub
from dlcfuzz.engine.store import Store
from dlcfuzz.oracle.opinions import CONFIRMED, SUSPECTED, UNDECIDED, summary_of

COLORS = ("#2a6", "#c52", "#36c", "#a3a")
STYLE = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
    "pre{background:#f4f4f4;padding:.6em;overflow:auto;max-height:28em}"
    "td,th{padding:.2em .6em;text-align:left;vertical-align:top}"
    "table.counts td:nth-child(n+2){text-align:right}"
    ".known{color:#777}.new{color:#b20}"
    "details{margin:.4em 0}summary{cursor:pointer}"
    ".charts{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}figure{margin:0}"
)


def _ticks(top: float, n: int = 4) -> list[float]:
    """Round tick values from 0 to `top` (about n of them: steps of 1, 2, 2.5 or 5 times a power of ten)."""
    if top <= 0:
        return [0.0]
    raw = top / n
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * 0.999)
    return [i * step for i in range(int(top / step + 1e-9) + 1)]


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v - round(v)) < 1e-9 or abs(v) >= 100 else f"{v:.2g}" if abs(v) < 1 else f"{v:.1f}"


def line_chart(series: Sequence[tuple[str, Sequence[tuple[float, float]]]], x_label: str, y_label: str,
               title: str, width: int = 520, height: int = 240, step: bool = False) -> str:
    """An SVG line chart with both axes labelled (name and unit), ticks and a legend."""
    series = [(name, list(pts)) for name, pts in series if pts]
    if not series or all(len(p) < 2 for _, p in series):
        return f"<figure><figcaption>{html.escape(title)}</figcaption><p>(not enough samples for a chart)</p></figure>"
    left, right, top, bottom = 56, 12, 22, 44
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    x_max, y_max = max(xs) or 1.0, max(ys) or 1.0
    w, h = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + w * x / x_max

    def py(y: float) -> float:
        return top + h - h * y / y_max

    out = [f'<figure><svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'role="img" aria-label="{html.escape(title)}" xmlns="http://www.w3.org/2000/svg">',
           f'<text x="{left}" y="14" font-size="12" font-weight="bold">{html.escape(title)}</text>',
           f'<line x1="{left}" y1="{top + h}" x2="{left + w}" y2="{top + h}" stroke="#444"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + h}" stroke="#444"/>']
    for t in _ticks(x_max):
        out.append(f'<line x1="{px(t):.1f}" y1="{top + h}" x2="{px(t):.1f}" y2="{top + h + 4}" stroke="#444"/>'
                   f'<text x="{px(t):.1f}" y="{top + h + 16}" font-size="10" text-anchor="middle">{_fmt(t)}</text>')
    for t in _ticks(y_max):
        out.append(f'<line x1="{left - 4}" y1="{py(t):.1f}" x2="{left + w}" y2="{py(t):.1f}" stroke="#eee"/>'
                   f'<text x="{left - 6}" y="{py(t) + 3:.1f}" font-size="10" text-anchor="end">{_fmt(t)}</text>')
    out.append(f'<text x="{left + w / 2}" y="{height - 6}" font-size="11" text-anchor="middle">'
               f'{html.escape(x_label)}</text>')
    out.append(f'<text x="12" y="{top + h / 2}" font-size="11" text-anchor="middle" '
               f'transform="rotate(-90 12 {top + h / 2})">{html.escape(y_label)}</text>')
    for i, (name, pts) in enumerate(series):
        coords = []
        for j, (x, y) in enumerate(pts):
            if step and j:
                coords.append(f"{px(x):.1f},{py(pts[j - 1][1]):.1f}")
            coords.append(f"{px(x):.1f},{py(y):.1f}")
        color = COLORS[i % len(COLORS)]
        out.append(f'<polyline class="series" fill="none" stroke="{color}" stroke-width="2" points="{" ".join(coords)}">'
                   f'<title>{html.escape(name)}</title></polyline>')
        if len(series) > 1:
            lx = left + 8 + 150 * i
            out.append(f'<rect x="{lx}" y="{top + 2}" width="10" height="10" fill="{color}"/>'
                       f'<text x="{lx + 14}" y="{top + 11}" font-size="10">{html.escape(name)}</text>')
    out.append("</svg></figure>")
    return "".join(out)


def continuous_time(rows: list[tuple]) -> list[tuple]:
    """Stats rows with elapsed time made continuous over resumed runs (each run starts again at 0)."""
    out, offset, prev = [], 0.0, None
    for r in rows:
        if prev is not None and r[0] < prev:
            offset = out[-1][0]
        prev = r[0]
        out.append((offset + r[0], *r[1:]))
    return out


def run_totals(rows: list[tuple], column: int) -> int | None:
    """A counter of the stats rows (each run counting from 0) summed over the runs: each run's last value; None
    where a run did not record it (a store of an older dlcfuzz)."""
    total, prev = 0, None
    for r in [*rows, None]:
        if prev is not None and (r is None or r[1] < prev[1]):  # the run of `prev` ended: a resumed one counts anew
            if prev[column] is None:
                return None
            total += prev[column]
        prev = r
    return total if rows else None


def throughput(rows: list[tuple], window_s: float = 2.5) -> list[tuple[float, float]]:
    """(elapsed s, tests/s) over windows of at least `window_s` (the last sample may come a moment after
    the one before it: a rate over it would be noise)."""
    out: list[tuple[float, float]] = []
    a: tuple = (0.0, 0)  # the campaign starts with no tests
    for b in rows:
        if b[1] < a[1]:  # a resumed run that counts from zero again
            a = (b[0], 0)
        if b[0] - a[0] >= window_s:
            out.append((b[0], (b[1] - a[1]) / (b[0] - a[0])))
            a = b
    return out


def time_of_test(rows: list[tuple], test_id: int) -> float:
    """Elapsed time of the first stats sample that counts test `test_id` (samples every 5 s)."""
    return next((r[0] for r in rows if r[1] >= test_id), rows[-1][0] if rows else 0.0)


def test_case_of_blob(blob: bytes | None) -> Any:
    """The TestCase of a stored graph test (the auto strategy prefixes its arm); None for another
    strategy's payload (TIR, a mutation chain) or a compacted test."""
    from dlcfuzz.oracle.testcase import TestCase
    from dlcfuzz.strategies.auto import MAGIC

    if not blob:
        return None
    blob = bytes(blob)
    if blob.startswith(MAGIC):
        blob = blob[len(MAGIC) + 1:]
    try:
        return TestCase.from_bytes(blob)
    except Exception:  # not a graph test
        return None


def tested_configs(store: Store, test_id: int) -> list[str] | None:
    """The configurations the finding's test compared (None when the store cannot tell)."""
    try:
        tc = test_case_of_blob(store.test_blob(test_id))
    except Exception:  # an unknown test (a store of another dlcfuzz)
        return None
    return [c.name for c in tc.configs] if tc is not None else None


def test_counts(store: Store) -> tuple[Counter, Counter, int]:
    """(tests per operator, tests per dtype, tests counted) over the tests whose blob the store keeps."""
    by_op: Counter = Counter()
    by_dtype: Counter = Counter()
    n = 0
    for _, blob in store.blobs_from(0):
        tc = test_case_of_blob(blob)
        if tc is None:
            continue
        g = tc.graph
        n += 1
        by_op.update(g.ops_used())
        by_dtype.update({t.dtype for t in g.types().values()})
    return by_op, by_dtype, n


def applied_summary(store: Store) -> tuple[str, dict[str, tuple[int, int]], list[str]] | None:
    """What the campaign's compiler recorded of its passes or rewrites that acted on tests (`Backend.applied_label`):
    (the backend's words for them, name -> (tests, first test), every name of the installed release that none of
    them is); None when the store holds no such record. Without the compiler installed the denominator is the names
    seen."""
    counts = store.applied_counts()
    if not counts:
        return None
    label, universe = "compiler passes that acted on a test", ()
    try:
        from dlcfuzz.backends import get_backend

        backend = get_backend(str((store.first_run() or {}).get("compiler", "")))
        label, universe = backend.applied_label or label, backend.applied_universe()
    except Exception:  # noqa: BLE001 - a compiler not installed here, or of a newer dlcfuzz: the names seen alone
        pass
    return label, counts, sorted(set(universe) - set(counts))


def applied_line(store: Store) -> str | None:
    """`LABEL: X of Y` (the campaign's compiler's passes that acted on its tests), None without records."""
    summary = applied_summary(store)
    if summary is None:
        return None
    label, counts, never = summary
    return f"{label}: {len(counts)} of {len(counts) + len(never)}"


def minimized_to(key: str | None) -> str | None:
    """The smallest optimization set (`opts=`) or pass sequence (`passes=`) a finding's key was minimized to; None
    where its reduction made none."""
    from dlcfuzz.oracle.categories import DedupKey

    k = DedupKey.parse(key or "")
    found = k.option("opts")
    found = found if found is not None else k.option("passes")
    if found is None:
        return None
    return found.replace(",", ", ") if found not in ("", "none") else "none needed"


def _applied(store: Store) -> list[str]:
    """The section of the compiler's passes that acted on the campaign's tests, and those that never did."""
    summary = applied_summary(store)
    if summary is None:
        return []
    label, counts, never = summary
    rows = "".join(f"<tr><td>{html.escape(n)}</td><td>{t}</td><td>{first}</td></tr>" for n, (t, first) in counts.items())
    missing = (f"<details><summary>{len(never)} never did</summary><p>{html.escape(', '.join(never))}</p></details>"
               if never else "")
    return [f"<h2>{html.escape(label[:1].upper() + label[1:])}: {len(counts)} of {len(counts) + len(never)}</h2>"
            "<p>As the compiler's own compiles recorded them while the campaign's tests ran (measured, not fed back); "
            "of every one the installed release has.</p><table class='counts'><tr><th>name</th><th>tests</th>"
            f"<th>first test</th></tr>{rows}</table>{missing}"]


def _counts_table(name: str, tests: Counter, findings: Counter, clusters: Counter) -> str:
    keys = sorted(set(tests) | set(findings), key=lambda k: (-findings[k], -tests[k], k))
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{tests[k]}</td><td>{findings[k]}</td><td>{clusters[k]}</td></tr>"
                   for k in keys)
    return (f"<table class='counts'><tr><th>{name}</th><th>tests</th><th>distinct findings</th><th>clusters</th>"
            f"</tr>{rows}</table>")


def classify(run: Path, store: Store, register: Register | None) -> tuple[list[Cluster], dict[int, KnownBug]]:
    """The clusters of the distinct findings and the known bug each finding matches."""
    rows = store.findings(distinct_only=True)
    clusters = run_clusters(run, rows)
    known: dict[int, KnownBug] = {}
    if register is not None:
        detail = {r["id"]: r["detail"] or "" for r in rows}
        for c in clusters:
            for f in c.members:
                k = register.match(f, detail[f.id])
                if k is not None:
                    known[f.id] = k
    return merge_known(clusters, known), known


def merge_known(clusters: list[Cluster], known: dict[int, KnownBug]) -> list[Cluster]:
    """Clusters that the register attributes to the same known bug are one cluster: its entry says they
    are one root cause (e.g. one in-place write of a kernel seen through several consumer operators)."""
    merged: list[Cluster] = []
    by_bug: dict[str, Cluster] = {}
    for c in clusters:
        k = cluster_known(c, known)
        if k is not None and k.id in by_bug:
            into = by_bug[k.id]
            into.members = sorted([*into.members, *c.members], key=lambda f: f.id)
            continue
        if k is not None:
            by_bug[k.id] = c
        merged.append(c)
    for number, c in enumerate(merged, 1):
        c.number = number
    return merged


def cluster_known(c: Cluster, known: dict[int, KnownBug]) -> KnownBug | None:
    """A cluster is known when every member matches a known bug (the first member's is shown)."""
    return known.get(c.first.id) if all(f.id in known for f in c.members) else None


def write_report(out: Path, store: Store, register: Register | None = None) -> Path:
    if register is None:
        try:
            register = Register()
        except Exception:  # a broken user register must not cost the campaign its report
            register = Register(use_env=False)
    totals = store.totals()
    rows_by_id = {r["id"]: r for r in store.findings(distinct_only=True)}
    clusters, known = classify(out, store, register)
    stats = continuous_time(store.stats_rows())
    parts = _statistics(store, totals, rows_by_id, clusters, known, stats)
    parts.append(_charts(store, rows_by_id, clusters, stats))
    parts += _breakdowns(store, totals, clusters)
    parts += _clusters(out, store, rows_by_id, clusters, known)
    path = out / "report.html"
    path.write_text("\n".join(parts))
    return path


def _statistics(store: Store, totals: dict, rows_by_id: dict, clusters: list, known: dict, stats: list) -> list[str]:
    run = store.first_run() or {}
    n_new = sum(1 for c in clusters if cluster_known(c, known) is None)
    parts = [
        "<!doctype html><meta charset='utf-8'><title>dlcfuzz report</title>",
        f"<style>{STYLE}</style>",
        f"<h1>dlcfuzz campaign: {html.escape(str(run.get('compiler', '?')))}</h1>",
        f"<p>{html.escape(str(run.get('version', '')))}; strategy {html.escape(str(run.get('strategy', '')))}; "
        f"master seed {run.get('seed')}</p>",
        "<h2>Statistics</h2><table>",
        f"<tr><th>tests</th><td>{totals['tests']}</td></tr>",
    ]
    for k, v in sorted(totals["verdicts"].items(), key=lambda kv: str(kv[0])):
        parts.append(f"<tr><th>verdict {html.escape(str(k))}</th><td>{v}</td></tr>")
    if stats:
        last = stats[-1]
        rate = last[1] / last[0] if last[0] else 0.0
        parts.append(f"<tr><th>elapsed</th><td>{last[0]:.0f} s ({rate:.1f} tests/s)</td></tr>")
        executions = run_totals(stats, 7)
        if executions is not None:
            parts.append(f"<tr><th>executions</th><td>{executions} (a compiled program run on one input set and "
                         f"judged; {executions / max(1, totals['tests']):.1f} a test)</td></tr>")
    parts.append(f"<tr><th>distinct findings</th><td>{len(rows_by_id)}</td></tr>"
                 f"<tr><th>root-cause clusters</th><td>{len(clusters)}: <span class='new'>{n_new} new</span>, "
                 f"<span class='known'>{len(clusters) - n_new} known</span></td></tr>")
    split = second_opinion_counts(rows_by_id.values())
    parts.append(f"<tr><th>second opinions</th><td>{split[CONFIRMED]} {CONFIRMED}, <span class='new'>"
                 f"{split[SUSPECTED]} {SUSPECTED}{'s' if split[SUSPECTED] != 1 else ''} (dlcfuzz's bugs until shown "
                 f"otherwise)</span>, {split[UNDECIDED]} {UNDECIDED}</td></tr></table>")
    return parts


def second_opinion_counts(rows: Iterable[dict[str, Any]]) -> Counter:
    """Distinct findings by what their second opinion says (oracle/opinions.py: CONFIRMED, SUSPECTED or
    UNDECIDED, which a finding without one counts as)."""
    return Counter({CONFIRMED: 0, SUSPECTED: 0, UNDECIDED: 0, **Counter(map(summary_of, rows))})


def _charts(store: Store, rows_by_id: dict, clusters: list, stats: list) -> str:
    """Findings and clusters, tests/s and coverage over time, with axes and units."""
    charts = []
    if stats:
        found_at = sorted(time_of_test(stats, rows_by_id[c.first.id]["test_id"]) for c in clusters)
        cluster_pts = [(0.0, 0.0)] + [(t, i + 1) for i, t in enumerate(found_at)] + [(stats[-1][0], len(found_at))]
        charts.append(line_chart([("distinct findings", [(0.0, 0.0)] + [(r[0], r[6]) for r in stats]),
                                  ("clusters", cluster_pts)],
                                 "elapsed time (s)", "count", "Findings and clusters over time", step=True))
        # a window's rate holds over the whole window: one step from its start (the window before's end) to its
        # end, so that a campaign of one window (a few seconds) draws its rate too
        rates = throughput(stats)
        steps = [(start, r) for start, (_, r) in zip([0.0] + [t for t, _ in rates], rates)] + rates[-1:]
        charts.append(line_chart([("tests/s", steps)], "elapsed time (s)", "tests per second", "Throughput",
                                 step=True))
    curve = store.coverage_curve()
    if curve and any(r[2] for r in curve):
        charts.append(line_chart([("coverage", [(0.0, 0.0)] + [(r[0], r[2]) for r in curve])], "elapsed time (s)",
                                 "coverage items", "Coverage over time"))
    else:
        cov = store.coverage_over_time()
        if cov:
            charts.append(line_chart([("coverage", [(0.0, 0.0)] + [(float(t), float(n)) for t, n in cov])],
                                     "test number", "coverage items", "Coverage over tests"))
        else:
            charts.append("<figure><figcaption>Coverage</figcaption><p>(this strategy measures no coverage)</p></figure>")
    return "<h2>Tests over time</h2><div class='charts'>" + "".join(charts) + "</div>"


def _breakdowns(store: Store, totals: dict, clusters: list) -> list[str]:
    """Unknown verdicts by reason, counts per operator and dtype, internal errors, the strategy's section."""
    parts = []
    if totals["unknowns"]:
        parts.append("<h2>Unknown verdicts by reason</h2><p>Tests whose outcome cannot be judged (the reference is "
                     "not finite, the output is ill-conditioned, the compiler rejects a documented gap, ...).</p>"
                     "<table class='counts'><tr><th>reason</th><th>tests</th></tr>" + "".join(
                         f"<tr><td>{html.escape(k)}</td><td>{v}</td></tr>"
                         for k, v in sorted(totals["unknowns"].items(), key=lambda kv: -kv[1])) + "</table>")
    t_op, t_dt, n_kept = test_counts(store)
    f_op: Counter = Counter()
    f_dt: Counter = Counter()
    c_op: Counter = Counter()
    c_dt: Counter = Counter()
    for c in clusters:
        for f in c.members:
            f_op.update(f.ops)
            f_dt.update(f.dtypes)
        c_op.update({o for f in c.members for o in f.ops})
        c_dt.update({d for f in c.members for d in f.dtypes})
    if t_op or f_op:
        parts.append(f"<h2>Operators and dtypes</h2><p>Tests: counted over the {n_kept} of {totals['tests']} tests "
                     "whose graph the store keeps (routine tests are compacted to one row and regenerate on replay, "
                     "so they are not counted here). Findings: the operators and dtypes of each reduced graph.</p>"
                     "<div class='charts'>" + _counts_table("operator", t_op, f_op, c_op)
                     + _counts_table("dtype", t_dt, f_dt, c_dt) + "</div>")
    parts += _applied(store)
    internal = store.internal_errors()
    if internal:
        parts.append(f"<h2>Internal errors ({len(internal)})</h2><p>Exceptions of dlcfuzz's own code; each test is "
                     "stored and replays with <code>dlcfuzz replay RUN --test N</code>.</p><table>"
                     "<tr><th>test</th><th>phase</th><th>error</th></tr>" + "".join(
                         f"<tr><td>{e['test_id']}</td><td>{html.escape(e['phase'])}</td>"
                         f"<td>{html.escape(scrub(e['error'] or '')[:200])}</td></tr>" for e in internal[:50])
                     + "</table>")
    strategy = (store.first_run() or {}).get("strategy")
    if strategy:
        from dlcfuzz.errors import UsageError
        from dlcfuzz.strategies import get_strategy

        try:
            parts.append(get_strategy(strategy).report_section(store))
        except UsageError:  # a strategy of a newer or plug-in dlcfuzz: its section is left out
            pass
    return parts


def _clusters(out: Path, store: Store, rows_by_id: dict, clusters: list, known: dict) -> list[str]:
    """Each root-cause cluster with its members, reproducer and upstream issue text."""
    from dlcfuzz.engine.issue import issue_for

    dups = store.duplicate_counts()
    parts = ["<h2>Root-cause clusters</h2>"]
    if not clusters:
        parts.append("<p>No findings.</p>")
    for c in clusters:
        k = cluster_known(c, known)
        mark = (f"<span class='known'>known: {_ref_html(k)}</span>" if k else "<span class='new'>new</span>")
        parts.append(f"<h3 id='c{c.number}'>cluster {c.number}: {html.escape(c.describe())} "
                     f"({len(c.members)} finding{'s' if len(c.members) > 1 else ''}; {mark})</h3><ul>")
        for f in c.members:
            parts.append(_member_html(f, rows_by_id[f.id], dups.get(f.id, 0), known.get(f.id)))
        parts.append("</ul>")
        row = rows_by_id[c.first.id]
        parts.append(f"<pre>{html.escape(scrub(row['detail'] or '')[:3000])}</pre>")
        repro = scrub(row["reproducer"] or "")
        folder = finding_folder(Path("."), row).as_posix()
        parts.append(f"<details class='repro'><summary>reproducer ({html.escape(folder)}/repro.py)</summary>"
                     f"<pre>{html.escape(repro) or '(none written)'}</pre></details>")
        issue = issue_for(out, row, known=k, duplicates=dups.get(c.first.id, 0),
                          tested=tested_configs(store, row["test_id"]))
        parts.append(f"<details class='issue'><summary>upstream issue text (<code>dlcfuzz issue RUN {c.first.id}</code>)"
                     f"</summary><pre>{html.escape(issue.markdown)}</pre></details>")
    return parts


def _ref_html(k: KnownBug) -> str:
    if k.tracker and k.tracker.startswith("https://"):
        return f"<a href='{html.escape(k.tracker)}'>{html.escape(k.tracker)}</a>"
    return html.escape(k.ref)


def _member_html(f: FindingFacts, row: dict[str, Any], dups: int, k: KnownBug | None) -> str:
    configs = ", ".join(json.loads(row["configs"] or "[]"))
    known = f" <span class='known'>known: {_ref_html(k)}</span>" if k else ""
    return (f"<li id='f{f.id}'>#{f.id} {html.escape(f.category)} ({html.escape(configs)}); "
            f"ops {html.escape(','.join(sorted(f.ops)) or '?')}; dtypes {html.escape(','.join(sorted(f.dtypes)) or '?')};"
            f" seen {1 + dups} time{'s' if dups else ''}; reduced {row['nodes']} &rarr; {row['reduced_nodes']} nodes"
            f"{' (not minimal: ' + html.escape(row['not_minimal']) + ')' if row.get('not_minimal') else ''}; "
            f"{'minimized to ' + html.escape(minimal) + '; ' if (minimal := minimized_to(row.get('key'))) else ''}"
            f"signature <code>{row['signature']}</code>{known}"
            f"{' <span class=new>' + SUSPECTED.upper() + '</span>' if summary_of(row) == SUSPECTED else ''}</li>")
