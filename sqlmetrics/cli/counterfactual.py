"""`sqlmetrics ips`, `sqlmetrics pbm-ips` and `sqlmetrics interleaving`: counterfactual estimates from click logs
(stats.counterfactual), printed as a small table, or as JSON with -f json."""
from __future__ import annotations

from ..options import COUNTERFACTUAL_CMD
from ..results import json_text
from ..stats.counterfactual import INTERLEAVING_ROLES, IPS_ROLES, PBM_ROLES, interleaving, ips, pbm_ips
from .common import add_option_flags, option_values, role_pairs

FORMATS = ("text", "json")


def add_parser(sub, parents) -> None:
    p = sub.add_parser("ips", parents=parents, help="IPS and SNIPS of a new ranker's click-through, from a log",
                       description="Inverse propensity scoring of a new ranker's click-through from a log of a "
                                   "randomised logging policy: one row per logged decision with action, click, "
                                   "propensity and new_action, or a stochastic policy's new_propensity instead of "
                                   "new_action; with a reward model's reward_hat and new_reward_hat also the direct "
                                   "method (dm) and doubly robust (dr) estimates (map other names with --column). "
                                   "Computed in DuckDB; IPS and self-normalised IPS with normal intervals.")
    _common_arguments(p, IPS_ROLES)
    p.set_defaults(func=run_ips)
    p = sub.add_parser("pbm-ips", parents=parents, help="position-based IPS of a new ranker's clicks per list",
                       description="Position-based inverse propensity scoring of a new ranker's clicks per ranked "
                                   "list: one row per impression and position with click, propensity (the logging "
                                   "policy's probability of that document at that position) and new_propensity (the "
                                   "new policy's), or action and new_action (map other names with --column). "
                                   "Assumes a click depends only on the document and its position.")
    _common_arguments(p, PBM_ROLES)
    p.add_argument("--propensities", metavar="FILE",
                   help="examination propensities by position (position, propensity; normalised to position 1, as "
                        "`sqlmetrics clicks LOG --propensities pivot -o FILE` writes them): each slot's weight is "
                        "divided by its position's too")
    p.set_defaults(func=run_pbm_ips)
    p = sub.add_parser("interleaving", parents=parents, help="team-draft interleaving credit, from a click log",
                       description="Team-draft interleaving credit from interleaved click logs: one row per shown "
                                   "document with impression, team (two rankers' names) and click (map other names "
                                   "with --column). Per impression the team with more clicks wins; the difference "
                                   "of the win shares with a normal interval, and the sign test of the wins.")
    _common_arguments(p, INTERLEAVING_ROLES)
    p.set_defaults(func=run_interleaving)


def _common_arguments(p, roles: tuple) -> None:
    p.add_argument("log", metavar="LOG", help="the log: a Parquet, CSV or JSON Lines file")
    p.add_argument("--column", action="append", metavar="ROLE=NAME",
                   help=f"the log's column playing a role ({', '.join(roles)}); by default the role's own name")
    p.add_argument("--confidence", type=float, default=0.95, metavar="C", help="the intervals' level (default 0.95)")
    if roles != INTERLEAVING_ROLES:
        p.add_argument("--clip", type=float, metavar="W", help="set every weight above W to W (default: none)")
    p.add_argument("-f", "--format", choices=FORMATS, default="text", help="text (default) or json")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of standard output")
    add_option_flags(p, COUNTERFACTUAL_CMD)


def _json(out: dict) -> str:
    """Strict JSON (json_text): a value that is not a number (SNIPS when the rankers never agree, a spread of one
    row) is null."""
    return json_text(out, indent=2) + "\n"


def run_ips(args) -> tuple:
    est = ips(args.log, role_pairs(args.column, "--column", IPS_ROLES), args.confidence, clip=args.clip,
              **option_values(args, COUNTERFACTUAL_CMD))
    names = [name for name in ("ips", "snips", "dm", "dr") if name in est]
    agree = "the new policy may take" if est["stochastic"] else "the new ranker agrees with"
    ending = f"{est['n']} logged decisions; {agree} the logged action in {est['matches']}."
    return _estimates(args, est, names, ("n", "matches"), ending)


def run_pbm_ips(args) -> tuple:
    est = pbm_ips(args.log, role_pairs(args.column, "--column", PBM_ROLES), args.confidence, clip=args.clip,
                  propensities=args.propensities, **option_values(args, COUNTERFACTUAL_CMD))
    ending = (f"{est['impressions']} impressions of {est['n']} slots; the new ranker may show the logged document "
              f"in {est['matches']}.")
    return _estimates(args, est, ["ips"], ("impressions", "n", "matches"), ending)


def _estimates(args, est: dict, names: list, counts: tuple, ending: str) -> tuple:
    """The estimates as JSON, or a table of them and a line of counts."""
    if args.clip is not None:
        counts += ("clipped",)
        ending += f" {est['clipped']} weight(s) clipped to {args.clip:g}."
    if args.format == "json":
        out = {**{k: est[k] for k in counts}, "confidence": args.confidence,
               **({"clip": args.clip} if args.clip is not None else {}), **{name: vars(est[name]) for name in names}}
        return _json(out), args.output
    level = f"{args.confidence:.0%}".replace(".0%", "%")
    lines = [f"{'estimate':<9} {'value':>10} {'se':>10} {level + ' interval':>25}"]
    for name in names:
        e = est[name]
        lines.append(f"{name:<9} {e.value:>10.4f} {e.se:>10.4f} {f'[{e.ci_low:.4f}, {e.ci_high:.4f}]':>25}")
    lines.append(ending)
    return "\n".join(lines) + "\n", args.output


def run_interleaving(args) -> tuple:
    res = interleaving(args.log, role_pairs(args.column, "--column", INTERLEAVING_ROLES),
                       args.confidence, **option_values(args, COUNTERFACTUAL_CMD))
    a, b = res["teams"]
    if args.format == "json":
        out = {"teams": [a, b], "impressions": res["impressions"], "wins": res["wins"], "ties": res["ties"],
               "delta": vars(res["delta"]), "p_value": res["p_value"], "confidence": args.confidence}
        return _json(out), args.output
    d = res["delta"]
    level = f"{args.confidence:.0%}".replace(".0%", "%")
    return (f"{res['impressions']} impressions: {a} wins {res['wins'][a]}, {b} wins {res['wins'][b]}, "
            f"{res['ties']} ties\n"
            f"delta ({b} - {a}) {d.value:.4f} (se {d.se:.4f}, {level} interval [{d.ci_low:.4f}, {d.ci_high:.4f}]); "
            f"sign test p = {res['p_value']:.4g}\n"), args.output
