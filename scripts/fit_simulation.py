"""Regenerate collsim/fitted/sim_params.json: the simulation's per-transfer costs fitted with the simulation in
the loop on our 2 x H200 and the calibration logs L01/L15 (collsim.fit.simulated says how), and print the
before/after errors of every set of collsim.fit.sim_sets (held-out sets and sizes included).

    cd <repo> && python scripts/fit_simulation.py -o collsim/fitted/sim_params.json
    python scripts/fit_simulation.py --score collsim/fitted/sim_params.json   # the table only

"before" is hopper_params.json, what the simulation started from until this fit; about 10 minutes on one core.
"""
import argparse
import json
import sys
from dataclasses import replace

from collsim.fit.sim_sets import load_series, score, table
from collsim.fit.simulated import fit_simulation, training_errors
from collsim.fitted.params import load_params, save_params
from collsim.fitted.rescale import hopper_params


def start_params():
    """hopper_params.json: what the simulation started from before this fit."""
    return hopper_params()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="write the fitted parameters here")
    ap.add_argument("--score", help="score this parameters file against the start, fit nothing")
    ap.add_argument("--algos", default="Ring,Tree")
    ap.add_argument("--max-nfev", type=int, default=None)
    ap.add_argument("--json", help="write both scores as JSON here")
    args = ap.parse_args(argv)
    series = load_series()
    start = start_params()
    before = score(series, start)
    if args.score:
        params = load_params(args.score)
    else:
        kw = {"max_nfev": args.max_nfev} if args.max_nfev else {}
        params, report = fit_simulation(start, series, tuple(args.algos.split(",")), **kw)
        params = replace(params, meta={"source": "collsim.fit.simulated (scripts/fit_simulation.py)",
                                       "start": "collsim/fitted/hopper_params.json", "fit": report,
                                       "errors": training_errors(params, series)})
        if args.output:
            save_params(params, args.output)
    after = score(series, params)
    print(table(before, after))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"before": before, "after": after}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
