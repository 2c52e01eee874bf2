"""The Python bindings return what the CLI prints with --json for the same inputs, and raise
ValueError (never crash) on bad input."""

import json
import math
import pathlib
import tomllib

import pytest

import tailbound
from conftest import EXAMPLES

TWO_SERVERS = EXAMPLES / "two-servers.toml"
SIX_TENANTS = EXAMPLES / "six-tenants.toml"
METHODS = ["snc-meister", "snc-hop", "snc-conv", "dnc", "snc-martingale"]


def same(py, cli, path="", ignore=()):
    """Asserts `py` equals `cli` (floats to 1e-12 relative: the same code on the same input,
    only the process differs). The CLI's JSON opens with its format and the tool's version
    (`format`, `tool`), which the bindings' plain records do not carry; every other key must
    match."""
    if isinstance(py, dict):
        assert isinstance(cli, dict), f"{path}: {cli!r} is not an object"
        for key in py:
            if key in ignore:
                continue
            assert key in cli, f"{path}.{key} missing from the CLI's record"
            same(py[key], cli[key], f"{path}.{key}", ignore)
        extra = [k for k in cli if k not in py and k not in ("format", "tool")]
        assert not extra, f"{path}: the CLI's record has {extra} the bindings lack"
    elif isinstance(py, list):
        assert isinstance(cli, list) and len(py) == len(cli), f"{path}: {py!r} != {cli!r}"
        for i, (a, b) in enumerate(zip(py, cli)):
            same(a, b, f"{path}[{i}]", ignore)
    elif isinstance(py, float) or isinstance(cli, float):
        assert isinstance(py, (int, float)) and isinstance(cli, (int, float)), f"{path}: {py!r} != {cli!r}"
        assert math.isclose(py, cli, rel_tol=1e-12, abs_tol=0.0), f"{path}: {py!r} != {cli!r}"
    else:
        assert py == cli, f"{path}: {py!r} != {cli!r}"


def topology(traces):
    """An SNC-Meister topology of three clients on production traces, as a dict."""

    def client(slo, trace, host):
        return {
            "SLO": slo,
            "SLOpercentile": 99.9,
            "trace": str(traces / trace),
            "clientHost": host,
            "clientVM": "1",
            "serverHost": "s",
            "serverVM": "1",
        }

    return {
        "clients": [
            client(0.05, "trace0000.csv", "a"),
            client(0.02, "trace0004.csv", "b"),
            client(0.01, "trace0001.csv", "a"),
        ]
    }


@pytest.mark.parametrize("method", METHODS)
def test_bound_equals_cli_for_every_method(cli, method):
    code, expected, stderr = cli.json("bound", TWO_SERVERS, "--method", method)
    if code == 2:
        # the method does not apply to this network: the bindings refuse it the same way
        with pytest.raises(ValueError) as e:
            tailbound.bound(TWO_SERVERS, method)
        first_line = stderr.strip().splitlines()[0]
        assert str(e.value).split(": ")[-1] in first_line, (str(e.value), stderr)
        return
    got = tailbound.bound(str(TWO_SERVERS), method)
    same(got, expected)
    assert got["method"] == method
    assert len(got["tenants"]) == 3
    # exit 1 means some tenant misses its SLO
    assert (code == 0) == all(t["meets_slo"] for t in got["tenants"])


def test_bound_of_a_topology_dict_on_production_traces(cli, traces, tmp_path):
    topo = topology(traces)
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(topo))
    code, expected, _ = cli.json("bound", path, "--method", "snc-meister", "--percentile", "99.99")
    assert code in (0, 1)
    got = tailbound.bound(topo, "snc-meister", percentile=99.99)
    assert got["scenario"] == "<dict>"
    same(got, expected, ignore=("scenario",))
    bounds = [t["bound_s"] for t in got["tenants"]]
    assert all(b is not None and 0 < b < 10 for b in bounds), bounds
    # nothing of the dict's temporary file is left behind
    assert not list(pathlib.Path.cwd().glob(".tailbound-scenario-*"))


def test_bound_of_a_toml_scenario_as_a_dict_resolves_paths_against_base_dir(cli):
    scenario = tomllib.loads(TWO_SERVERS.read_text())
    _, expected, _ = cli.json("bound", TWO_SERVERS, "--method", "dnc")
    got = tailbound.bound(scenario, "dnc", base_dir=EXAMPLES)
    same(got, expected, ignore=("scenario",))


def test_admission_arrivals_equal_cli_admit(cli):
    for policy in ("snc-meister", "priority-meister"):
        code, expected, _ = cli.json("admit", SIX_TENANTS, "--policy", policy)
        assert code == 0
        adm = tailbound.Admission(str(SIX_TENANTS), policy)
        records = [adm.arrive(name) for name in adm.tenants]
        same(records, expected["tenants"], ignore=("seconds",))
        same(adm.report(), expected, ignore=("seconds",))
        same(adm.decisions(), expected["decisions"])
        # the one-call form runs the same job
        same(tailbound.admit(SIX_TENANTS, policy), expected, ignore=("seconds",))
        assert expected["admitted"] == len(adm.admitted) > 0


def test_admission_depart_frees_room_and_bounds_hold():
    adm = tailbound.Admission(TWO_SERVERS, "snc-meister")
    first = adm.arrive(0)
    assert first["admitted"] and first["name"] == "web"
    adm.arrive("db")
    adm.arrive(2)
    admitted = adm.admitted
    assert admitted, "no tenant admitted"
    bounds = adm.bounds()
    assert [b["name"] for b in bounds] == admitted
    assert all(b["meets_slo"] and b["bound_s"] <= b["slo_s"] for b in bounds), bounds
    gone = admitted[0]
    changes = adm.depart(gone)
    assert isinstance(changes, list)
    assert gone not in adm.admitted
    assert len(adm.bounds()) == len(admitted) - 1
    with pytest.raises(ValueError, match="not admitted|admitted"):
        adm.depart(gone)
    with pytest.raises(ValueError, match="already arrived|arrived"):
        adm.arrive("web")


def test_replay_under_decisions_equals_cli_simulate(cli, tmp_path):
    adm = tailbound.Admission(SIX_TENANTS, "priority-meister")
    for t in range(len(adm.tenants)):
        adm.arrive(t)
    decisions = adm.decisions()
    path = tmp_path / "decisions.json"
    path.write_text(json.dumps(decisions))
    code, expected, _ = cli.json("simulate", SIX_TENANTS, "--decisions", path)
    assert code in (0, 1)
    got = tailbound.replay(SIX_TENANTS, decisions)
    same(got, expected)
    same(tailbound.replay(SIX_TENANTS, path), expected)
    assert [t["name"] for t in got["tenants"]] == adm.admitted
    assert all(t["requests"] > 0 for t in got["tenants"])
    # fluid service without decisions is the CLI's --fluid
    code, fluid, _ = cli.json("simulate", SIX_TENANTS, "--fluid")
    same(tailbound.replay(SIX_TENANTS, mtu_bytes=None), fluid)


def test_curves_equal_cli(cli, traces):
    trace = traces / "trace0000.csv"
    _, expected, _ = cli.json("curve", "rb", trace, "--stage", "net-out", "--prune", "20")
    got = tailbound.rb(str(trace), "net-out", prune=20)
    same(got, expected)
    assert len(got["rb"]) <= 21
    _, expected, _ = cli.json("curve", "mmpp", trace, "--stage", "net-out", "--part", "first-half")
    same(tailbound.mmpp(trace, "net-out", part="first-half"), expected)
    _, expected, _ = cli.json("curve", "effbw", trace, "--stage", "storage", "--delay", "20ms")
    got = tailbound.effective_bandwidth(trace, "storage", 0.02)
    same(got, expected)
    assert got["rate"] >= got["mean_rate"] > 0


def test_read_trace_arrays(traces):
    trace = traces / "trace0000.csv"
    t = tailbound.read_trace(trace)
    n = tailbound.rb(trace, "net-in")["requests"]
    assert len(t["arrival_s"]) == len(t["size_bytes"]) == len(t["op"]) == n > 0
    arrivals = list(t["arrival_s"])
    assert arrivals == sorted(arrivals)
    assert all(s > 0 for s in t["size_bytes"])
    try:
        import numpy
    except ImportError:
        assert isinstance(t["arrival_s"], list)
    else:
        assert isinstance(t["arrival_s"], numpy.ndarray) and t["arrival_s"].dtype == numpy.float64
        assert t["size_bytes"].dtype == numpy.uint64
    half = tailbound.read_trace(trace, part="first-half")
    assert 0 < len(half["arrival_s"]) < n


def test_fig7_equals_cli_experiment(cli):
    code, expected, _ = cli.json(
        "experiment", "bounds-tenants", "--tenants", "1,5", "--methods", "dnc,snc-meister"
    )
    assert code == 0
    got = tailbound.bounds_vs_tenants(tenants=[1, 5], methods=["dnc", "snc-meister"])
    same(got, expected)
    one, five = (r["bound_s"]["snc-meister"] for r in got["rows"])
    assert 0 < one < five, got["rows"]


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: tailbound.bound(TWO_SERVERS, "snc-magic"), ["snc-magic", "dnc"]),
        (lambda: tailbound.bound("/nonexistent/scenario.toml"), ["/nonexistent/scenario.toml"]),
        (lambda: tailbound.bound(TWO_SERVERS, percentile=100.0), ["percentile", "100"]),
        (lambda: tailbound.Admission(TWO_SERVERS, "fifo"), ["fifo", "snc-meister"]),
        (lambda: tailbound.rb(TWO_SERVERS, "net-in"), [str(TWO_SERVERS)]),
        (lambda: tailbound.rb("/nonexistent.csv", "sideways"), ["sideways", "net-in"]),
        (lambda: tailbound.replay(SIX_TENANTS, {"policy": "x"}), ["decisions", "tenants"]),
        (lambda: tailbound.replay(SIX_TENANTS, mtu_bytes=1), ["mtu_bytes", "64"]),
        (lambda: tailbound.bound({"hosts": [], "tenants": [{"name": "x"}]}), ["<dict>"]),
        (lambda: tailbound.bound(42), ["path", "dict"]),
        (lambda: tailbound.Admission(SIX_TENANTS).arrive("nobody"), ["nobody", "kv-a"]),
        (lambda: tailbound.Admission(SIX_TENANTS).arrive(99), ["99", "6 tenants"]),
        (lambda: tailbound.bounds_vs_tenants(tenants=[0]), ["tenants", "0"]),
    ],
)
def test_bad_input_raises_value_error_naming_it(call, words):
    with pytest.raises(ValueError) as e:
        call()
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_fig7_example_prints_the_experiment(tmp_path):
    import subprocess
    import sys

    example = EXAMPLES.parents[2] / "crates" / "py" / "examples" / "snc_meister_fig7.py"
    out_csv = tmp_path / "fig7.csv"
    run = subprocess.run(
        [sys.executable, str(example), "--max-tenants", "10", "--methods", "dnc,snc-meister", "--csv", str(out_csv)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    exp = tailbound.bounds_vs_tenants(max_tenants=10, methods=["dnc", "snc-meister"])
    lines = run.stdout.splitlines()
    assert "Fig. 7" in lines[0]
    rows = [line.split() for line in lines[2:]]
    assert [float(r[0]) for r in rows] == [r["x"] for r in exp["rows"]] == [1, 5, 10]
    for printed, row in zip(rows, exp["rows"]):
        assert float(printed[2]) == pytest.approx(row["bound_s"]["snc-meister"] * 1e3, abs=5e-4)
    table = [line.split(",") for line in out_csv.read_text().splitlines()]
    assert table[0] == ["tenants", "dnc_s", "snc-meister_s"] and len(table) == 4
