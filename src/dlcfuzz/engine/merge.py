"""`dlcfuzz merge`: one campaign folder from the stores of several drivers (shards).

One driver feeds only so many workers (bench/cluster_scaling.py), so a large campaign runs several
drivers, each with its own `--seed` and store, and merges them for reading: `list`, `report`,
`issue` and `replay --finding` work on the merged folder as on any campaign. Shards must test the
same compiler release with the same strategy. Every test keeps its number offset by the shards
before it (test N of shard k is N + the tests of shards 0..k-1); findings are renumbered in the order
they were found (wall-clock time), and a finding whose signature an earlier one already has becomes
its duplicate, across shards as within one. Coverage is the union (each item counted once, at the
first test that reached it); statistics over time are the shards' sums at each moment, with the
distinct findings counted after the cross-shard deduplication. A merged folder is for reading: it is
never resumed, and a compacted test (regenerated from its shard's master seed) is replayed in its
shard, which the store names.
"""

from __future__ import annotations

import bisect
import json
import shutil
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlcfuzz.engine.clusters import finding_folder
from dlcfuzz.engine.store import Store
from dlcfuzz.errors import UsageError

STORE = "store.sqlite"


@dataclass
class MergeSummary:
    shards: int
    tests: int
    findings: int
    distinct: int
    cross_shard_duplicates: int  # distinct in their shard, a duplicate of another shard's finding


def _open_shard(path: Path) -> Store:
    if not (path / STORE).exists():
        raise UsageError(f"merge: no campaign store at {path / STORE}")
    store = Store(path / STORE, create=False)
    if store.first_run() is None:
        raise UsageError(f"merge: {path} holds no campaign")
    if store.shards():
        raise UsageError(f"merge: {path} is itself a merged folder: merge its shards instead")
    return store


def _rows(store: Store, sql: str) -> list[tuple]:
    return store.db.execute(sql).fetchall()


def merge_campaigns(out: Path, shard_paths: list[Path]) -> MergeSummary:
    """Write the merged campaign to `out` (a new folder) from the campaign folders `shard_paths`."""
    if len(shard_paths) < 2:
        raise UsageError("merge: give at least two campaign folders")
    if len({p.resolve() for p in shard_paths}) != len(shard_paths):
        raise UsageError("merge: a campaign folder is given twice")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"merge: {out} exists and is not empty")
    shards = [_open_shard(p) for p in shard_paths]
    firsts = [s.first_run() or {} for s in shards]
    for p, f in zip(shard_paths[1:], firsts[1:]):
        for k in ("compiler", "version", "strategy"):
            if f.get(k) != firsts[0].get(k):
                raise UsageError(f"merge: {p} ran {k} {f.get(k)!r}, {shard_paths[0]} ran {firsts[0].get(k)!r}: "
                                 "shards of one campaign test one compiler release with one strategy")
    out.mkdir(parents=True, exist_ok=True)
    merged = Store(out / STORE)
    db = merged.db
    db.execute("BEGIN")
    offset, seen_items = 0, set()
    findings: list[tuple[float, int, dict[str, Any]]] = []  # (created, shard, row) of every shard
    stats: list[tuple[int, list[tuple]]] = []
    id_offsets = []
    for k, (path, s) in enumerate(zip(shard_paths, shards)):
        run_ids = {}
        for rid, started, seed, compiler, version, strategy, args in _rows(
                s, "SELECT id, started, seed, compiler, version, strategy, args FROM runs ORDER BY id"):
            a = {**json.loads(args), "shard": path.name}
            cur = db.execute("INSERT INTO runs (started, seed, compiler, version, strategy, args) VALUES (?,?,?,?,?,?)",
                             (started, seed, compiler, version, strategy, json.dumps(a)))
            run_ids[rid] = cur.lastrowid
        size = s.next_seq()  # test ids are seq + 1: one constant offset maps a shard's tests
        id_offsets.append(offset)
        for row in _rows(s, "SELECT id, run_id, seq, seed, created, status, verdict, seconds, blob FROM tests"):
            db.execute("INSERT INTO tests VALUES (?,?,?,?,?,?,?,?,?)",
                       (row[0] + offset, run_ids.get(row[1], row[1]), row[2] + offset, *row[3:]))
        db.executemany("INSERT INTO observations VALUES (?,?,?,?,?,?,?)",
                       [(r[0] + offset, *r[1:]) for r in _rows(s, "SELECT test_id, config, status, error, compile_s, "
                                                                  "run_s, input_set FROM observations")])
        db.executemany("INSERT INTO compact_tests VALUES (?,?,?,?)",
                       [(r[0] + offset, *r[1:]) for r in _rows(s, "SELECT * FROM compact_tests")])
        db.executemany("INSERT INTO corpus VALUES (?,?)", [(r[0] + offset, r[1]) for r in _rows(s, "SELECT * FROM corpus")])
        db.executemany("INSERT INTO schedule VALUES (?,?,?)",
                       [(r[0] + offset, *r[1:]) for r in _rows(s, "SELECT * FROM schedule")])
        db.executemany("INSERT OR IGNORE INTO oatest_triggers VALUES (?,?,?,?)",
                       [(r[0] + offset, *r[1:]) for r in _rows(s, "SELECT * FROM oatest_triggers")])
        db.executemany("INSERT INTO internal_errors (test_id, seq, seed, phase, error, traceback, created) "
                       "VALUES (?,?,?,?,?,?,?)",
                       [(None if r[0] is None else r[0] + offset, r[1] + offset, *r[2:]) for r in _rows(
                           s, "SELECT test_id, seq, seed, phase, error, traceback, created FROM internal_errors")])
        for name, n, first in _rows(s, "SELECT name, tests, first_test FROM applied"):  # counts add, the first stays
            db.execute("INSERT INTO applied VALUES (?,?,?) ON CONFLICT(name) DO UPDATE SET tests = tests + ?, "
                       "first_test = MIN(first_test, ?)", (name, n, first + offset, n, first + offset))
        for cat, n in _rows(s, "SELECT category, count FROM unknowns"):
            db.execute("INSERT INTO unknowns VALUES (?, ?) ON CONFLICT(category) DO UPDATE SET count = count + ?",
                       (cat, n, n))
        db.executemany("INSERT OR IGNORE INTO capabilities VALUES (?,?,?,?,?)", _rows(s, "SELECT * FROM capabilities"))
        for tid, items in _coverage(s):  # the union: an item counts at the first test (in merged order) reaching it
            new = [i for i in items if i not in seen_items]
            seen_items.update(new)
            if new:
                db.execute("INSERT INTO coverage_items VALUES (?,?,?)",
                           (tid + offset, len(new), zlib.compress("\n".join(new).encode(), 6)))
        for row in s.findings(distinct_only=False):
            findings.append((row["created"] or 0.0, k, row))
        stats.append((k, _rows(s, "SELECT t, elapsed, tests, valid, bugs, unknown, findings, compiler_s, executions FROM stats "
                                  "ORDER BY t")))
        db.execute("INSERT INTO shards VALUES (?,?,?,?)", (path.name, offset + 1, offset + size, firsts[k].get("seed")))
        offset += size
    summary = _merge_findings(merged, shard_paths, findings, id_offsets, out)
    _merge_stats(merged, stats)
    db.execute("COMMIT")
    summary.tests = merged.totals()["tests"]
    merged.close()
    for s in shards:
        s.close()
    return summary


def _coverage(s: Store) -> list[tuple[int, list[str]]]:
    out: dict[int, list[str]] = {}
    for tid, item in _rows(s, "SELECT test_id, item FROM coverage"):  # stores of older dlcfuzz
        out.setdefault(tid, []).append(item)
    for tid, data in _rows(s, "SELECT test_id, items FROM coverage_items"):
        out.setdefault(tid, []).extend(zlib.decompress(data).decode().split("\n"))
    return sorted(out.items())


def _merge_findings(merged: Store, shard_paths: list[Path], findings: list[tuple[float, int, dict[str, Any]]],
                    id_offsets: list[int], out: Path) -> MergeSummary:
    """Findings in the order found; duplicates by signature across shards; their folders copied, renamed."""
    findings.sort(key=lambda f: (f[0], f[1], f[2]["id"]))
    new_id: dict[tuple[int, int], int] = {}
    first_of: dict[str, int] = {}  # signature -> its distinct finding's merged id
    distinct = cross = 0
    for n, (_, k, row) in enumerate(findings, start=1):
        new_id[(k, row["id"])] = n
    for _, k, row in findings:
        fid = new_id[(k, row["id"])]
        sig = row["signature"]
        if row["duplicate_of"] is not None:
            dup = new_id.get((k, row["duplicate_of"]))
            dup = first_of.get(sig, dup)
        elif sig in first_of:
            dup, cross = first_of[sig], cross + 1
        else:
            dup, distinct = None, distinct + 1
            first_of[sig] = fid
        f = {**row, "id": fid, "test_id": row["test_id"] + id_offsets[k], "duplicate_of": dup}
        merged.add_finding(**f)
        src = finding_folder(shard_paths[k], row)
        if src.exists():
            shutil.copytree(src, finding_folder(out, f))
    return MergeSummary(len(shard_paths), 0, len(findings), distinct, cross)


def _merge_stats(merged: Store, stats: list[tuple[int, list[tuple]]]) -> None:
    """At each moment a shard recorded statistics, the sum of every shard's latest row then; distinct
    findings are those of the merged store found by then. Elapsed time counts from the earliest start."""
    series = [(([r[0] for r in rows]), rows) for _, rows in stats if rows]
    if not series:
        return
    start = min(rows[0][0] - rows[0][1] for _, rows in series)
    created = sorted(r[0] or 0.0 for r in merged.db.execute("SELECT created FROM findings WHERE duplicate_of IS NULL"))
    for t in sorted({t for times, _ in series for t in times}):
        total, executions_known = [0.0] * 7, True
        for times, rows in series:
            i = bisect.bisect_right(times, t) - 1
            if i >= 0:
                total = [a + (b or 0) for a, b in zip(total, rows[i][2:])]
                executions_known = executions_known and rows[i][8] is not None  # None: a shard of an older dlcfuzz
        tests, valid, bugs, unknown, found, compiler_s, executions = total
        merged.db.execute(
            "INSERT INTO stats (run_id, t, elapsed, tests, valid, bugs, unknown, findings, distinct_findings, compiler_s,"
            " executions) VALUES (1,?,?,?,?,?,?,?,?,?,?)",
            (t, t - start, int(tests), int(valid), int(bugs), int(unknown), int(found),
             bisect.bisect_right(created, t), compiler_s, int(executions) if executions_known else None))
