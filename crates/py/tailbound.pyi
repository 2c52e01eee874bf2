"""tailbound: tail-latency bounds from traces (Python bindings of the tailbound Rust toolkit).

Every function runs the same library code as the `tailbound` command of the same name and
returns the record that command prints with ``--json``, as plain Python objects (dicts,
lists, floats, ``None`` for null): ``pandas.DataFrame(record["tenants"])`` gives a table.
Errors raise ``ValueError`` with a message naming the file, line or field at fault.

Scenario arguments take a path (``str`` or ``os.PathLike``) to a file in any format
``tailbound`` reads (its own TOML/JSON, SNC-Meister's topology or model config JSON), or a
``dict`` in one of those formats; a dict's relative trace paths resolve against ``base_dir``
(default: the current folder), where it is briefly written as a hidden temporary file.
"""

import os
from typing import Any, Dict, List, Optional, Sequence, Union

__version__: str

Path = Union[str, "os.PathLike[str]"]
Scenario = Union[Path, Dict[str, Any]]
Record = Dict[str, Any]
Tenant = Union[int, str]

def read_trace(path: Path, part: str = "whole") -> Record:
    """Reads a trace (any format tailbound reads) into arrays.

    ``part``: whole, first-half or second-half. Returns ``{"name": str, "arrival_s":
    float64 array [s], "size_bytes": uint64 array [bytes], "op": list of str}``; numpy arrays
    when numpy is installed, lists otherwise.
    """

def rb(
    path: Path,
    stage: str,
    part: str = "whole",
    profile: Optional[Path] = None,
    prune: Optional[int] = None,
) -> Record:
    """The exact r-b curve and arrival curve of a trace at ``stage`` (net-in, storage,
    net-out), pruned to at most ``prune`` pieces when given (``tailbound curve rb --json``).

    ``profile``: a storage device profile in WorkloadCompactor's JSON format (default: the
    bundled Intel 710 SSD). Keys: trace, stage, unit, requests, mean_rate, rb
    (``[rate, burst]`` pairs), arrival (``[t, work]`` pairs), tail_rate, pruned_to.
    """

def mmpp(
    path: Path,
    stage: str,
    part: str = "whole",
    profile: Optional[Path] = None,
    interval_s: Optional[float] = None,
    step_s: Optional[float] = None,
    band_factor: Optional[float] = None,
    max_states: Optional[int] = None,
    sizes: Optional[str] = None,
    state_rate: Optional[str] = None,
    batch_gap_s: Optional[float] = None,
) -> Record:
    """A Markov-modulated Poisson process fitted to a trace's work at ``stage``
    (SNC-Meister §4.3; ``tailbound curve mmpp --json``). ``None`` takes the CLI's defaults:
    interval 1 s, step 10 µs, band factor 2, 10 states, sizes "exponential", state rate
    "band-centre", batch gap 0 s.
    """

def effective_bandwidth(
    path: Path,
    stage: str,
    delay_s: float,
    part: str = "whole",
    profile: Optional[Path] = None,
) -> Record:
    """The least rate of a bucket-less shaper delaying the trace's work at ``stage`` by at
    most ``delay_s`` seconds (``tailbound curve effbw --json``)."""

def bound(
    scenario: Scenario,
    method: str = "snc-meister",
    percentile: Optional[float] = None,
    theta: str = "brent",
    characterize: Optional[str] = None,
    base_dir: Optional[Path] = None,
) -> Record:
    """Every tenant's latency bound (``tailbound bound --json``).

    ``method``: snc-meister, snc-hop, snc-conv, dnc or snc-martingale. ``percentile``
    checks every tenant at that percentile instead of its own; ``theta``: brent or grid;
    ``characterize``: whole or first-half (default: the file format's). Keys: scenario,
    method, tenants (name, slo_s, percentile, priority, bound_s, unbounded, flows,
    meets_slo).
    """

def admit(scenario: Scenario, policy: str = "snc-meister", base_dir: Optional[Path] = None) -> Record:
    """The scenario's tenants arrive in file order under ``policy`` (snc-meister,
    priority-meister, silo++, qjump++, snc-martingale): ``tailbound admit --json``, with
    the decisions under "decisions"."""

def replay(
    scenario: Scenario,
    decisions: Optional[Union[Record, Path]] = None,
    part: str = "second-half",
    mtu_bytes: Optional[int] = 1500,
    window_s: float = 180.0,
    base_dir: Optional[Path] = None,
) -> Record:
    """Replays the scenario's requests through its queues under ``decisions`` (a dict as
    ``Admission.decisions()`` returns, or a decisions JSON file; ``None``: every tenant,
    priorities by SLO, no rate limits): ``tailbound simulate --json``. ``mtu_bytes=None``
    serves every request as one unit (fluid)."""

def bounds_vs_tenants(
    tenants: Optional[Sequence[int]] = None,
    max_tenants: int = 30,
    step: int = 5,
    link_bytes_per_s: float = 125e6,
    seed: int = 1,
    percentile: float = 99.9,
    methods: Optional[Sequence[str]] = None,
    theta: str = "brent",
) -> Record:
    """snc-meister Fig. 7: tenant t0's bound vs the number of identical tenants sharing two
    queues, per method (``tailbound experiment bounds-tenants --json``). Default counts: 1
    and every ``step`` up to ``max_tenants``; default methods: dnc, snc-hop, snc-conv,
    snc-meister, snc-martingale. Keys: experiment, x_label, methods, link_bytes_per_s,
    workload, seed, rows (``{"x": n, "bound_s": {method: seconds or None}}``)."""

class Admission:
    """Admission control over a scenario's tenants, arriving and departing in the order the
    caller chooses; an arrival is admitted only if it and every tenant it can affect still
    meet their SLOs."""

    def __init__(
        self,
        scenario: Scenario,
        policy: str = "snc-meister",
        mtu_bytes: Optional[int] = 1500,
        base_dir: Optional[Path] = None,
    ) -> None:
        """An empty system over the scenario's tenants; bounds cover packets of
        ``mtu_bytes`` (``None``: fluid)."""
    @property
    def tenants(self) -> List[str]:
        """The scenario's tenant names, in file order."""
    @property
    def admitted(self) -> List[str]:
        """The admitted tenants, in scenario order."""
    def arrive(self, tenant: Tenant) -> Record:
        """``tenant`` (index or name) arrives; its record as in ``tailbound admit --json``
        (name, slo_s, percentile, admitted, priority, bound_s, reason, changed, seconds)."""
    def depart(self, tenant: Tenant) -> List[Record]:
        """An admitted tenant departs; the tenants whose priority level changed
        (``{"tenant", "old", "new"}``)."""
    def bounds(self) -> List[Record]:
        """The admitted tenants' bounds under the current priorities and rate limits
        (tenant records as in ``tailbound bound --json``)."""
    def decisions(self) -> Record:
        """The decisions for every tenant that arrived (for ``replay``)."""
    def report(self) -> Record:
        """What ``tailbound admit --json`` prints after the arrivals so far."""
