"""The SQLite store: every test case (written before it runs), observations, findings, statistics.

It stays small: a test is stored whole before it runs (nothing is lost at a kill), and once it is
judged a routine one (passed, or an unknown such as a non-finite reference) of a strategy that
regenerates its tests from the master seed is compacted to one row of `compact_tests` (its
number, verdict, time and the digest of its blob); `dlcfuzz replay` regenerates it and checks the
digest. A routine test of a strategy that cannot regenerate it from the master seed alone keeps
a light blob when its strategy has one (a metamorphic mutant: the steps its chain took), rebuilt
on replay and checked against the digest of the test that ran. Findings, internal errors, other
unknowns and a bounded corpus of tests that added coverage keep their blobs. Coverage items are
stored zlib-compressed, one row per test.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from pathlib import Path
from typing import Any

from dlcfuzz.errors import UsageError

# one row per configuration and input set of a test
OBSERVATIONS = """CREATE TABLE IF NOT EXISTS observations (
  test_id INTEGER, config TEXT, status TEXT, error TEXT, compile_s REAL, run_s REAL, input_set INTEGER DEFAULT 0,
  PRIMARY KEY (test_id, config, input_set))"""
SCHEMA = OBSERVATIONS + """;
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, started REAL, seed INTEGER, compiler TEXT, version TEXT,
  strategy TEXT, args TEXT);
CREATE TABLE IF NOT EXISTS tests (
  id INTEGER PRIMARY KEY, run_id INTEGER, seq INTEGER UNIQUE, seed INTEGER, created REAL,
  status TEXT, verdict TEXT, seconds REAL, blob BLOB);
CREATE TABLE IF NOT EXISTS findings (
  id INTEGER PRIMARY KEY, test_id INTEGER, category TEXT, signature TEXT, key TEXT,
  compiler TEXT, version TEXT, configs TEXT, detail TEXT, created REAL,
  duplicate_of INTEGER, reduced BLOB, reproducer TEXT, nodes INTEGER, reduced_nodes INTEGER, not_minimal TEXT,
  opinions TEXT, input_set INTEGER);
CREATE INDEX IF NOT EXISTS findings_sig ON findings(signature);
CREATE TABLE IF NOT EXISTS stats (
  run_id INTEGER, t REAL, elapsed REAL, tests INTEGER, valid INTEGER, bugs INTEGER,
  unknown INTEGER, findings INTEGER, distinct_findings INTEGER, compiler_s REAL, executions INTEGER);
CREATE TABLE IF NOT EXISTS coverage (item TEXT PRIMARY KEY, test_id INTEGER);
CREATE TABLE IF NOT EXISTS coverage_items (test_id INTEGER PRIMARY KEY, n INTEGER, items BLOB);
CREATE TABLE IF NOT EXISTS compact_tests (seq INTEGER PRIMARY KEY, verdict INTEGER, ms INTEGER, digest INTEGER);
CREATE TABLE IF NOT EXISTS corpus (test_id INTEGER PRIMARY KEY, gain INTEGER);
CREATE TABLE IF NOT EXISTS schedule (seq INTEGER PRIMARY KEY, arm INTEGER, reward REAL);
CREATE TABLE IF NOT EXISTS unknowns (category TEXT PRIMARY KEY, count INTEGER);
CREATE TABLE IF NOT EXISTS capabilities (backend_version TEXT, op TEXT, dtype TEXT, ok INTEGER, reason TEXT,
  PRIMARY KEY (backend_version, op, dtype));
CREATE TABLE IF NOT EXISTS coverage_curve (run_id INTEGER, t REAL, elapsed REAL, tests INTEGER, items INTEGER,
  valuable INTEGER, mutants INTEGER, well_formed INTEGER);
CREATE TABLE IF NOT EXISTS internal_errors (id INTEGER PRIMARY KEY, test_id INTEGER, seq INTEGER, seed INTEGER,
  phase TEXT, error TEXT, traceback TEXT, created REAL);
CREATE TABLE IF NOT EXISTS shards (name TEXT, first_test INTEGER, last_test INTEGER, seed INTEGER);
CREATE TABLE IF NOT EXISTS oatest_triggers (test_id INTEGER, pattern TEXT, optimization TEXT, fired INTEGER,
  PRIMARY KEY (test_id, optimization));
CREATE TABLE IF NOT EXISTS applied (name TEXT PRIMARY KEY, tests INTEGER, first_test INTEGER);
"""


COMPACT_VERDICTS = ("pass", "unknown")  # a compacted test's verdict, stored as its index
VERDICT_SQL = "CASE verdict WHEN 0 THEN 'pass' ELSE 'unknown' END"


class Store:
    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise UsageError(f"no store at {self.path}")
        try:
            self.db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            columns = {r[1] for r in self.db.execute("PRAGMA table_info(findings)")}
            for column, kind in (("not_minimal", "TEXT"), ("opinions", "TEXT"), ("input_set", "INTEGER")):
                if column not in columns:  # a store of an older dlcfuzz: the columns it lacks
                    self.db.execute(f"ALTER TABLE findings ADD COLUMN {column} {kind}")
            if "executions" not in {r[1] for r in self.db.execute("PRAGMA table_info(stats)")}:
                self.db.execute("ALTER TABLE stats ADD COLUMN executions INTEGER")
            if "input_set" not in {r[1] for r in self.db.execute("PRAGMA table_info(observations)")}:
                self._migrate_observations()
        except sqlite3.DatabaseError as e:
            raise UsageError(f"{self.path} is not a readable dlcfuzz store: {e}") from None

    def _migrate_observations(self) -> None:
        """A store of an older dlcfuzz keys observations by (test, configuration): rebuilt keyed by the input
        set too (one per configuration and set), its rows as set 0."""
        self.db.execute("BEGIN")
        self.db.execute("ALTER TABLE observations RENAME TO observations_one_set")
        self.db.execute(OBSERVATIONS)
        self.db.execute("INSERT INTO observations SELECT test_id, config, status, error, compile_s, run_s, 0 "
                        "FROM observations_one_set")
        self.db.execute("DROP TABLE observations_one_set")
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    # ---- runs ----------------------------------------------------------
    def new_run(self, seed: int, compiler: str, version: str, strategy: str, args: dict[str, Any]) -> int:
        cur = self.db.execute(
            "INSERT INTO runs (started, seed, compiler, version, strategy, args) VALUES (?,?,?,?,?,?)",
            (time.time(), seed, compiler, version, strategy, json.dumps(args)),
        )
        return int(cur.lastrowid)

    def first_run(self) -> dict[str, Any] | None:
        row = self.db.execute("SELECT id, seed, compiler, version, strategy, args FROM runs ORDER BY id LIMIT 1").fetchone()
        if row is None:
            return None
        return {"id": row[0], "seed": row[1], "compiler": row[2], "version": row[3], "strategy": row[4],
                "args": json.loads(row[5])}

    def shards(self) -> list[dict[str, Any]]:
        """A merged store's shards (engine/merge.py): name, first and last test number, master seed; [] otherwise."""
        return [dict(zip(("name", "first_test", "last_test", "seed"), r))
                for r in self.db.execute("SELECT name, first_test, last_test, seed FROM shards ORDER BY first_test")]

    # ---- tests ---------------------------------------------------------
    def next_seq(self) -> int:
        row = self.db.execute("SELECT MAX(m) FROM (SELECT MAX(seq) m FROM tests UNION ALL "
                              "SELECT MAX(seq) FROM compact_tests)").fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def add_test(self, run_id: int, seq: int, seed: int, blob: bytes, coverage: list[str] | None = None,
                 status: str = "pending", verdict: str | None = None) -> int:
        """Store a test before it runs, with the coverage items it adds (one transaction: a resumed
        campaign's coverage is exactly that of the tests it holds)."""
        self.db.execute("BEGIN")
        test_id = seq + 1  # stable ids: a compacted test keeps its number (SQLite would reuse a freed rowid)
        self.db.execute(
            "INSERT INTO tests (id, run_id, seq, seed, created, status, verdict, blob) VALUES (?,?,?,?,?,?,?,?)",
            (test_id, run_id, seq, seed, time.time(), status, verdict, blob),
        )
        if coverage:
            self._add_items(test_id, coverage)
        self.db.execute("COMMIT")
        return test_id

    def _add_items(self, test_id: int, items: list[str]) -> None:
        row = self.db.execute("SELECT items FROM coverage_items WHERE test_id = ?", (test_id,)).fetchone()
        old = zlib.decompress(row[0]).decode().split("\n") if row else []
        data = zlib.compress("\n".join(old + list(items)).encode(), 6)
        self.db.execute("INSERT OR REPLACE INTO coverage_items VALUES (?,?,?)", (test_id, len(old) + len(items), data))

    def coverage(self, before_test: int | None = None) -> list[str]:
        """Every coverage item (those added by tests before `before_test`: the state a strategy had
        when it generated that test)."""
        where = "" if before_test is None else f" WHERE test_id < {int(before_test)}"
        out = [r[0] for r in self.db.execute("SELECT item FROM coverage" + where)]  # stores of older dlcfuzz
        for (data,) in self.db.execute("SELECT items FROM coverage_items" + where + " ORDER BY test_id"):
            out.extend(zlib.decompress(data).decode().split("\n"))
        return out

    def add_coverage(self, test_id: int, items: list[str]) -> None:
        """Coverage items a test added after it ran (coverage measured inside the compiler's worker)."""
        if items:
            self._add_items(test_id, items)

    def add_coverage_point(self, run_id: int, elapsed: float, tests: int, items: int, valuable: int = 0,
                           mutants: int = 0, well_formed: int = 0) -> None:
        self.db.execute("INSERT INTO coverage_curve VALUES (?,?,?,?,?,?,?,?)",
                        (run_id, time.time(), elapsed, tests, items, valuable, mutants, well_formed))

    def coverage_curve(self) -> list[tuple[float, int, int, int, int, int]]:
        """(elapsed s, tests, coverage items, valuable tests, mutants, well-formed mutants) over time;
        the elapsed time of a resumed run continues from the previous run's last point."""
        rows = self.db.execute("SELECT run_id, elapsed, tests, items, valuable, mutants, well_formed FROM coverage_curve"
                               " ORDER BY t").fetchall()
        out: list[tuple[float, int, int, int, int, int]] = []
        offset = {"t": 0.0, "n": 0, "v": 0, "m": 0, "w": 0}
        last_run, prev = None, None
        for run_id, elapsed, tests, items, valuable, mutants, wf in rows:
            if run_id != last_run and prev is not None:
                offset = {"t": prev[0], "n": prev[1], "v": prev[3], "m": prev[4], "w": prev[5]}
            last_run = run_id
            prev = (offset["t"] + elapsed, offset["n"] + tests, items, offset["v"] + valuable, offset["m"] + mutants,
                    offset["w"] + wf)
            out.append(prev)
        return out

    def coverage_over_time(self) -> list[tuple[int, int]]:
        """(test id, items covered up to it) at each test that added coverage."""
        rows = self.db.execute("SELECT test_id, COUNT(*) FROM coverage GROUP BY test_id UNION ALL "
                               "SELECT test_id, n FROM coverage_items ORDER BY test_id").fetchall()
        total, out = 0, []
        for tid, n in rows:
            total += n
            out.append((int(tid), total))
        return out

    def update_blob(self, test_id: int, blob: bytes) -> None:
        self.db.execute("UPDATE tests SET blob = ? WHERE id = ?", (blob, test_id))

    def pending_tests(self) -> list[tuple[int, int, int, bytes]]:
        """(id, seq, seed, blob) of the tests stored but never finished (in flight at a kill)."""
        return [(r[0], r[1], r[2], r[3]) for r in
                self.db.execute("SELECT id, seq, seed, blob FROM tests WHERE status = 'pending' ORDER BY seq")]

    def blobs_from(self, seq: int) -> Any:
        """(seq, blob) of the tests from number `seq` on, in order (a strategy rebuilding its state)."""
        return self.db.execute("SELECT seq, blob FROM tests WHERE seq >= ? AND length(blob) > 0 ORDER BY seq", (seq,))

    def blobs_before(self, seq: int) -> Any:
        """(seq, blob) of the stored tests before number `seq`, the latest first."""
        return self.db.execute("SELECT seq, blob FROM tests WHERE seq < ? AND length(blob) > 0 ORDER BY seq DESC",
                               (seq,))

    def last_blob_before(self, seq: int) -> bytes | None:
        row = self.db.execute("SELECT blob FROM tests WHERE seq < ? AND length(blob) > 0 ORDER BY seq DESC LIMIT 1",
                              (seq,)).fetchone()
        return None if row is None else row[0]

    def test_row(self, test_id: int) -> dict[str, Any]:
        """id, seq, seed (None for a compacted test: the master seed derives it), status, verdict, and the
        digest of a compacted test's blob."""
        row = self.db.execute("SELECT id, seq, seed, status, verdict, NULL FROM tests WHERE id = ?", (test_id,)).fetchone()
        if row is None:
            row = self.db.execute(f"SELECT seq + 1, seq, NULL, 'done', {VERDICT_SQL}, digest FROM compact_tests "
                                  "WHERE seq = ?", (test_id - 1,)).fetchone()
        if row is None:
            raise UsageError(f"no test {test_id} in {self.path}")
        return dict(zip(("id", "seq", "seed", "status", "verdict", "digest"), row))

    def coverage_test_ids(self) -> list[int]:
        """The tests that added coverage and keep their blob, in order (a strategy's seed pool on resume)."""
        return [r[0] for r in self.db.execute(
            "SELECT DISTINCT c.test_id FROM (SELECT test_id FROM coverage UNION SELECT test_id FROM coverage_items) c "
            "JOIN tests t ON t.id = c.test_id WHERE t.blob IS NOT NULL AND length(t.blob) > 0 ORDER BY c.test_id")]

    # ---- compaction and the corpus ----------------------------------------
    def compact(self, test_id: int, verdict: str, seconds: float, digest: int) -> None:
        """A routine test of a regenerating strategy: one small row instead of its blob and observations."""
        self.db.execute("BEGIN")
        self.db.execute("INSERT OR REPLACE INTO compact_tests SELECT seq, ?, ?, ? FROM tests WHERE id = ?",
                        (COMPACT_VERDICTS.index(verdict), round(seconds * 1000), digest, test_id))
        self.db.execute("DELETE FROM tests WHERE id = ?", (test_id,))
        self.db.execute("DELETE FROM observations WHERE test_id = ?", (test_id,))
        self.db.execute("COMMIT")

    def corpus(self) -> dict[int, int]:
        """test id -> coverage it added, of the kept corpus of interesting tests."""
        return dict(self.db.execute("SELECT test_id, gain FROM corpus").fetchall())

    def set_corpus(self, test_id: int, gain: int | None) -> None:
        if gain is None:
            self.db.execute("DELETE FROM corpus WHERE test_id = ?", (test_id,))
        else:
            self.db.execute("INSERT OR REPLACE INTO corpus VALUES (?, ?)", (test_id, gain))

    def test_verdict(self, test_id: int) -> tuple[str | None, float]:
        row = self.db.execute("SELECT verdict, seconds FROM tests WHERE id = ?", (test_id,)).fetchone()
        return (row[0], row[1] or 0.0) if row else (None, 0.0)

    # ---- OATest trigger rates ---------------------------------------------
    def add_triggers(self, test_id: int, pattern: str, fired: dict[str, bool]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO oatest_triggers VALUES (?,?,?,?)",
                            [(test_id, pattern, opt, int(f)) for opt, f in fired.items()])

    def trigger_rates(self) -> dict[str, tuple[int, int]]:
        """optimization -> (tests where it fired, tests that targeted it)."""
        rows = self.db.execute("SELECT optimization, SUM(fired), COUNT(*) FROM oatest_triggers "
                               "GROUP BY optimization ORDER BY optimization").fetchall()
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def first_fired(self) -> list[tuple[int, str]]:
        """(test id, optimization) of the first test (the lowest number) that fired each optimization."""
        return self.db.execute("SELECT MIN(test_id), optimization FROM oatest_triggers WHERE fired "
                               "GROUP BY optimization ORDER BY 1, 2").fetchall()

    # ---- the compiler's passes that acted on tests (Backend.applied_label) --------
    def add_applied(self, test_id: int, names: list[str]) -> None:
        """Count one test for each pass or rewrite that acted on it (a count per name: every test's names would
        make the store grow by dozens of rows a test)."""
        self.db.executemany("INSERT INTO applied VALUES (?, 1, ?) ON CONFLICT(name) DO UPDATE SET tests = tests + 1",
                            [(n, test_id) for n in sorted(set(names))])

    def applied_counts(self) -> dict[str, tuple[int, int]]:
        """name -> (tests it acted on, the first of them), the most tests first."""
        rows = self.db.execute("SELECT name, tests, first_test FROM applied ORDER BY tests DESC, name").fetchall()
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    # ---- the auto strategy's schedule --------------------------------------
    def set_arm(self, seq: int, arm: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO schedule VALUES (?, ?, NULL)", (seq, arm))

    def set_reward(self, seq: int, reward: float) -> None:
        self.db.execute("UPDATE schedule SET reward = ? WHERE seq = ?", (reward, seq))

    def arm_of(self, seq: int) -> int | None:
        row = self.db.execute("SELECT arm FROM schedule WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else int(row[0])

    def schedule_rows(self) -> list[tuple[int, int, float | None]]:
        return self.db.execute("SELECT seq, arm, reward FROM schedule ORDER BY seq").fetchall()

    def arm_totals(self) -> list[tuple[int, int, int, float]]:
        """arm -> (tests, tests with a yield, total yield)."""
        return self.db.execute("SELECT arm, COUNT(*), SUM(reward > 0), COALESCE(SUM(reward), 0) FROM schedule "
                               "GROUP BY arm ORDER BY arm").fetchall()

    # ---- internal errors -------------------------------------------------
    def add_internal_error(self, test_id: int | None, seq: int, seed: int, phase: str, error: str, tb: str) -> None:
        self.db.execute("INSERT INTO internal_errors (test_id, seq, seed, phase, error, traceback, created)"
                        " VALUES (?,?,?,?,?,?,?)", (test_id, seq, seed, phase, error, tb, time.time()))

    def internal_errors(self, test_id: int | None = None) -> list[dict[str, Any]]:
        q = "SELECT test_id, seq, seed, phase, error, traceback FROM internal_errors"
        rows = self.db.execute(q + (" WHERE test_id = ?" if test_id is not None else "") + " ORDER BY id",
                               (() if test_id is None else (test_id,))).fetchall()
        return [dict(zip(("test_id", "seq", "seed", "phase", "error", "traceback"), r)) for r in rows]

    def finish_test(self, test_id: int, verdict: str, seconds: float, observations: list[Any]) -> None:
        self.db.execute("BEGIN")
        self.db.execute("DELETE FROM observations WHERE test_id = ?", (test_id,))
        self.db.executemany(
            "INSERT INTO observations VALUES (?,?,?,?,?,?,?)",
            [(test_id, o.config, o.status, o.error, o.compile_s, o.run_s, o.input_set) for o in observations],
        )
        self.db.execute("UPDATE tests SET status='done', verdict=?, seconds=? WHERE id=?", (verdict, seconds, test_id))
        self.db.execute("COMMIT")

    def test_blob(self, test_id: int) -> bytes | None:
        """The stored test; None for a compacted one (its strategy regenerates it)."""
        row = self.db.execute("SELECT blob FROM tests WHERE id = ?", (test_id,)).fetchone()
        if row is None:
            self.test_row(test_id)  # raises for an unknown test
            return None
        return row[0]

    def count_unknown(self, category: str) -> None:
        self.db.execute(
            "INSERT INTO unknowns VALUES (?, 1) ON CONFLICT(category) DO UPDATE SET count = count + 1", (category,)
        )

    # ---- findings ------------------------------------------------------
    def finding_test(self, finding_id: int) -> int:
        row = self.db.execute("SELECT test_id FROM findings WHERE id = ?", (finding_id,)).fetchone()
        if row is None:
            raise UsageError(f"no finding {finding_id} in {self.path}")
        return int(row[0])

    def find_signature(self, signature: str) -> int | None:
        row = self.db.execute(
            "SELECT id FROM findings WHERE signature = ? AND duplicate_of IS NULL ORDER BY id LIMIT 1", (signature,)
        ).fetchone()
        return None if row is None else int(row[0])

    def has_finding_for(self, test_id: int, key: str) -> bool:
        return self.db.execute("SELECT 1 FROM findings WHERE test_id = ? AND substr(key, 1, ?) = ?", (test_id, len(key), key)).fetchone() is not None

    def add_finding(self, **f: Any) -> int:
        f.setdefault("created", time.time())
        cols = ", ".join(f)
        cur = self.db.execute(f"INSERT INTO findings ({cols}) VALUES ({', '.join('?' * len(f))})", tuple(f.values()))
        return int(cur.lastrowid)

    def update_finding(self, fid: int, **f: Any) -> None:
        sets = ", ".join(f"{k} = ?" for k in f)
        self.db.execute(f"UPDATE findings SET {sets} WHERE id = ?", (*f.values(), fid))

    def finding(self, fid: int) -> dict[str, Any]:
        cur = self.db.execute("SELECT * FROM findings WHERE id = ?", (fid,))
        names = [d[0] for d in cur.description]
        return dict(zip(names, cur.fetchone()))

    def findings(self, distinct_only: bool = True) -> list[dict[str, Any]]:
        q = "SELECT * FROM findings" + (" WHERE duplicate_of IS NULL" if distinct_only else "") + " ORDER BY id"
        cur = self.db.execute(q)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def duplicate_counts(self) -> dict[int, int]:
        return {r[0]: r[1] for r in self.db.execute(
            "SELECT duplicate_of, COUNT(*) FROM findings WHERE duplicate_of IS NOT NULL GROUP BY duplicate_of")}

    # ---- statistics ----------------------------------------------------
    def add_stats(self, run_id: int, **s: Any) -> None:
        self.db.execute(
            "INSERT INTO stats (run_id, t, elapsed, tests, valid, bugs, unknown, findings, distinct_findings, compiler_s,"
            " executions) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, time.time(), s["elapsed"], s["tests"], s["valid"], s["bugs"], s["unknown"], s["findings"],
             s["distinct_findings"], s["compiler_s"], s.get("executions")),
        )

    def stats_rows(self) -> list[tuple]:
        """(elapsed, tests, valid, bugs, unknown, findings, distinct findings, executions) per sample, each run's
        counts from 0 (executions None in a store of an older dlcfuzz)."""
        return list(self.db.execute("SELECT elapsed, tests, valid, bugs, unknown, findings, distinct_findings, executions "
                                    "FROM stats ORDER BY t"))

    def totals(self) -> dict[str, Any]:
        verdicts = dict(self.db.execute(
            "SELECT verdict, COUNT(*) FROM (SELECT verdict FROM tests WHERE status='done' UNION ALL "
            f"SELECT {VERDICT_SQL} FROM compact_tests) GROUP BY verdict").fetchall())
        tests = sum(verdicts.values())
        unknowns = dict(self.db.execute("SELECT category, count FROM unknowns").fetchall())
        return {"tests": tests, "verdicts": verdicts, "unknowns": unknowns}

    # ---- capability cache ----------------------------------------------
    def capabilities(self, backend_version: str) -> dict[tuple[str, str], tuple[bool, str]]:
        return {(r[0], r[1]): (bool(r[2]), r[3]) for r in self.db.execute(
            "SELECT op, dtype, ok, reason FROM capabilities WHERE backend_version = ?", (backend_version,))}

    def save_capabilities(self, backend_version: str, caps: dict[tuple[str, str], tuple[bool, str]]) -> None:
        self.db.execute("BEGIN")
        self.db.executemany("INSERT OR REPLACE INTO capabilities VALUES (?,?,?,?,?)",
                            [(backend_version, op, dt, int(ok), why) for (op, dt), (ok, why) in caps.items()])
        self.db.execute("COMMIT")
