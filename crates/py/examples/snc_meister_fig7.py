"""snc-meister Fig. 7 from Python: the latency bound of one tenant vs the number of identical
tenants sharing two queues, for every analysis tailbound has.

The same data as `tailbound experiment bounds-tenants --json` (the same library code).
Prints a text table; with --csv FILE also writes the rows as CSV (no plotting library
needed; load the CSV into pandas or matplotlib if you have them).

    python crates/py/examples/snc_meister_fig7.py [--max-tenants 30] [--step 5] [--csv fig7.csv]
"""

import argparse
import csv
import os
import sys
import tempfile

import tailbound


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-tenants", type=int, default=30, help="most tenants (default 30)")
    ap.add_argument("--step", type=int, default=5, help="tenants added per point (default 5)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the synthetic tenants")
    ap.add_argument("--percentile", type=float, default=99.9, help="SLO percentile")
    ap.add_argument(
        "--methods",
        default="dnc,snc-hop,snc-conv,snc-meister,snc-martingale",
        help="analyses, comma-separated",
    )
    ap.add_argument("--csv", help="also write the rows to this CSV file")
    a = ap.parse_args()

    try:
        exp = tailbound.bounds_vs_tenants(
            max_tenants=a.max_tenants,
            step=a.step,
            seed=a.seed,
            percentile=a.percentile,
            methods=a.methods.split(","),
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    methods = exp["methods"]
    print(f"snc-meister Fig. 7: bound of tenant t0 at p{a.percentile} [ms], two queues of "
          f"{exp['link_bytes_per_s'] * 8 / 1e9:g} Gbit/s")
    header = [exp["x_label"]] + methods
    print("  ".join(f"{h:>14}" for h in header))
    for row in exp["rows"]:
        cells = [f"{row['x']:>14g}"]
        for m in methods:
            b = row["bound_s"][m]
            cells.append(f"{'unbounded':>14}" if b is None else f"{b * 1e3:>14.3f}")
        print("  ".join(cells))

    if a.csv:
        # whole or not at all: write beside the target, then rename
        folder = os.path.dirname(os.path.abspath(a.csv))
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, newline="") as f:
            w = csv.writer(f)
            w.writerow([exp["x_label"]] + [f"{m}_s" for m in methods])
            for row in exp["rows"]:
                w.writerow([row["x"]] + ["" if row["bound_s"][m] is None else row["bound_s"][m] for m in methods])
        os.replace(f.name, a.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
