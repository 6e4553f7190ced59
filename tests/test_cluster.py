"""Campaigns on a Ray cluster: a local 2-node cluster (`ray.cluster_utils.Cluster`, 1 CPU per node),
started once for the module. The results of a cluster campaign equal a local run with the same seed
and test count, also when a node is killed mid-campaign or the driver is killed and resumed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray (the 'cluster' extra) is not installed")

from ray.cluster_utils import Cluster  # noqa: E402

# A registered plug-in module travels to every worker (handler_init's "plugins"): the actors must import it
# from the driver's import path (a full test run imports it in tests/test_engine.py; here on purpose)
import plugin_example  # noqa: E402,F401
from dlcfuzz.engine.campaign import Campaign, campaign_options  # noqa: E402
from dlcfuzz.exec import cluster as cluster_mod  # noqa: E402
from dlcfuzz.exec.cluster import RayPool  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLANTED = "dlcfuzz.exec.planted:make_handler"
CAMPAIGN = dict(compiler="planted:miseval@relu", strategy="random", seconds=600, seed=11, max_tests=80, ops=6,
                quiet=True)
RESULTS = "SELECT seq, verdict FROM tests UNION ALL SELECT seq, {} FROM compact_tests ORDER BY seq"


@pytest.fixture(scope="module")
def cluster():
    # a dead node is noticed in about a second (the default health check takes ~15 s)
    fast = {"health_check_period_ms": 500, "health_check_failure_threshold": 2}
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "_system_config": fast})
    c.add_node(num_cpus=1)
    c.wait_for_nodes()
    yield c
    ray.shutdown()
    c.shutdown()


def outcome(out: Path) -> tuple[list[tuple[int, str]], set[str], list[int]]:
    """Every test's verdict by number, the distinct findings' signatures, the numbers of the tests with findings."""
    from dlcfuzz.engine.store import VERDICT_SQL

    db = sqlite3.connect(out / "store.sqlite")
    verdicts = db.execute(RESULTS.format(VERDICT_SQL)).fetchall()
    signatures = {r[0] for r in db.execute("SELECT signature FROM findings WHERE duplicate_of IS NULL")}
    found = sorted({r[0] for r in db.execute("SELECT t.seq FROM findings f JOIN tests t ON t.id = f.test_id")})
    assert db.execute("SELECT COUNT(*) FROM tests WHERE status != 'done'").fetchone()[0] == 0
    return verdicts, signatures, found


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "run"
    Campaign(campaign_options(**CAMPAIGN, jobs=2, out=out)).run()
    verdicts, signatures, found = result = outcome(out)
    assert [s for s, _ in verdicts] == list(range(CAMPAIGN["max_tests"]))
    assert signatures and found and {v for _, v in verdicts} >= {"pass", "bug"}  # the planted fault fires, not always
    return result


def task(do: str, data: object = None) -> bytes:
    return json.dumps({"do": do, "data": data}).encode()


def test_actors_spread_over_nodes_and_attribute_crashes_hangs_and_oom_per_actor(cluster):
    with RayPool(PLANTED, {}, jobs=2, timeout_s=20, memory_mb=300, address=cluster.address) as pool:
        assert len(set(pool.nodes())) == 2  # one actor on each node
        assert [json.loads(r.payload) for r in pool.map([task("echo", i) for i in range(30)])] == list(range(30))
        r = pool.run(task("segfault"))
        assert (r.status, r.signal, r.worker_restarted) == ("crash", signal.SIGSEGV, True)
        r = pool.run(task("hang"), timeout_s=1.0)
        assert r.status == "timeout" and "1.0 s deadline" in r.error
        r = pool.run(task("alloc"))
        assert r.status == "oom" and "exceeded 300 MiB" in r.error
        assert pool.run(task("echo", "after")).payload == b'"after"'  # the actors' workers were restarted
        assert pool.stats.actors_lost == 0 and pool.stats.crashes == 1


def test_a_lost_actor_s_tasks_are_resubmitted_once_and_the_actor_replaced(cluster):
    with RayPool(PLANTED, {}, jobs=2, timeout_s=30, address=cluster.address) as pool:
        ids = [pool.submit(task("sleep", 0.5)) for _ in range(6)]
        time.sleep(0.3)
        ray.kill(pool._actors[0].handle, no_restart=True)  # from outside, as a node's OOM killer would
        got = [r.task_id for r in pool.results()]
        assert sorted(got) == ids  # every task answered exactly once
        assert pool.stats.actors_lost == 1 and pool.stats.tasks_resubmitted >= 1
        assert all(json.loads(r.payload) == 0.5 for r in pool.map([task("sleep", 0.5)] * 2))
        # the replacement comes up once the raylet has freed the killed actor's CPU: seconds when idle, over a
        # minute at load 6-8 (a clean-clone suite beside two false-positive campaigns); the wait ends when it is up
        deadline = time.monotonic() + 240
        while len(pool.nodes()) < 2 and time.monotonic() < deadline:
            pool.next_result(timeout=0.5)
        assert len(set(pool.nodes())) == 2


@pytest.mark.slow
def test_cluster_campaign_equals_a_local_run(cluster, local_run, tmp_path):
    out = tmp_path / "run"
    Campaign(campaign_options(**CAMPAIGN, jobs=2, out=out, cluster=cluster.address)).run()
    assert outcome(out) == local_run


@pytest.mark.slow
def test_a_killed_driver_resumes_on_the_cluster(cluster, local_run, tmp_path):
    out = tmp_path / "run"
    args = ["--compiler", CAMPAIGN["compiler"], "--strategy", "random", "--ops", str(CAMPAIGN["ops"]), "--seed",
            str(CAMPAIGN["seed"]), "--time", "600s", "--jobs", "2", "--cluster", cluster.address, "--quiet"]
    proc = subprocess.Popen([sys.executable, "-m", "dlcfuzz.cli", "fuzz", *args, "--out", str(out)], cwd=ROOT,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    done = 0
    while done < 20 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        try:
            done = sqlite3.connect(out / "store.sqlite").execute(
                "SELECT (SELECT COUNT(*) FROM tests WHERE status='done') + (SELECT COUNT(*) FROM compact_tests)"
            ).fetchone()[0]
        except sqlite3.OperationalError:
            continue
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its local processes; its actors die with their owner
    proc.wait()
    assert done >= 20, proc.stderr.read().decode()[-2000:]
    pending = sqlite3.connect(out / "store.sqlite").execute("SELECT COUNT(*) FROM tests WHERE status != 'done'")
    assert pending.fetchone()[0] > 0  # tests were in flight at the kill
    opts = campaign_options(seconds=600, jobs=2, out=out, quiet=True, max_tests=CAMPAIGN["max_tests"],
                            cluster=cluster.address)
    Campaign(opts, resume=True).run()
    verdicts, signatures, found = outcome(out)
    assert (verdicts, signatures) == local_run[:2]
    assert set(found) >= set(local_run[2])  # a test re-run after the kill may hold its finding twice, never less


@pytest.mark.slow
def test_a_node_killed_mid_campaign_loses_no_test_and_no_finding(cluster, local_run, tmp_path, monkeypatch):
    pools: list[RayPool] = []
    make_pool = cluster_mod.make_pool

    def recording(*a, **kw):  # the campaign's pools, to read their counters afterwards
        pools.append(make_pool(*a, **kw))
        return pools[-1]

    monkeypatch.setattr(cluster_mod, "make_pool", recording)
    out = tmp_path / "run"
    camp = Campaign(campaign_options(**CAMPAIGN, jobs=2, out=out, cluster=cluster.address))
    worker_node = next(iter(cluster.worker_nodes))

    def kill_when_running() -> None:
        deadline = time.monotonic() + 120
        # early: removing a node takes a while, and the 80 planted tests finish in about a second of work
        while camp.counts["tests"] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        cluster.remove_node(worker_node, allow_graceful=False)

    killer = threading.Thread(target=kill_when_running)
    killer.start()
    camp.run()
    killer.join()
    assert camp.counts["tests"] == CAMPAIGN["max_tests"]
    assert outcome(out) == local_run
    main = pools[0]
    assert main.stats.actors_lost == 1 and main.stats.tasks_resubmitted >= 1


def test_without_cluster_ray_is_never_imported_and_a_bad_address_is_one_line(tmp_path):
    check = ("import sys\nfrom dlcfuzz.cli import main\n"
             f"rc = main(['fuzz', '--compiler', 'planted:miseval@relu', '--strategy', 'random', '--max-tests', '6', "
             f"'--jobs', '1', '--out', {str(tmp_path / 'local')!r}, '--quiet'])\n"
             "print(rc, 'ray' in sys.modules, any(m.startswith('ray.') for m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.stdout.strip().splitlines()[-1] == "0 False False", p.stderr[-2000:]
    for address, why in (("127.0.0.1:1", "no Ray cluster answers there"), ("nonsense", "expected auto or HOST:PORT")):
        p = subprocess.run([sys.executable, "-m", "dlcfuzz.cli", "fuzz", "--compiler", "planted:miseval@relu",
                            "--strategy", "random", "--cluster", address, "--out", str(tmp_path / "x")], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        err = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(err) == 1 and why in err[0], p.stderr[-2000:]
        assert not (tmp_path / "x").exists()
