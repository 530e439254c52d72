"""`sqlmetrics list`: the measure catalogue, or what given names resolve to."""
from __future__ import annotations

import textwrap

from ..catalogue import measures, parse, trec_name
from ..catalogue.fusion import fusion_methods
from ..catalogue.reference import fusion_table
from ..catalogue.reference import table as markdown_table
from ..results import json_text


def add_parser(sub, parents) -> None:
    p = sub.add_parser("list", parents=parents, help="the measure catalogue",
                       description="The measures: names, aliases, parameters and defaults, what each is, and "
                                   "its reference. With names, shows what each one resolves to.")
    p.add_argument("names", metavar="NAME", nargs="*", help="measure names to resolve (any spelling)")
    p.add_argument("-f", "--format", choices=("table", "json", "markdown"), default="table")
    p.set_defaults(func=run)


def _measure_dict(m) -> dict:
    return {
        "name": m.name,
        "kind": m.kind,
        "description": m.description,
        "reference": m.reference,
        "aggregate": m.aggregate,
        "better": m.better,
        "aliases": [{"name": a.pattern, "tool": a.tool} for a in m.aliases],
        "parameters": [
            {"name": p.name, "type": p.type, "default": p.describe_default(), "required": p.required,
             "bound_by_at": p.name == m.at, **({"options": list(p.options)} if p.options else {})}
            for p in m.params.values()
        ],
    }


def _measure_text(m, width: int = 100) -> str:
    pad = " " * 4
    params = ", ".join(f"{'@' if p.name == m.at else ''}{p.name} "
                       + ("/".join(p.options) if p.type == "choice" else p.type) + f" ({p.describe_default()})"
                       for p in m.params.values()) or "none"
    lines = [f"{m.name}  [{m.kind}] ({m.aggregate}, {m.better} is better)"]
    for label, text in (("", m.description), ("parameters: ", params),
                        ("aliases: ", ", ".join(a.pattern + (f" ({a.tool})" if a.tool else "") for a in m.aliases) or "none"), ("reference: ", m.reference)):
        lines.append(textwrap.fill(label + text, width=width, initial_indent=pad,
                                   subsequent_indent=pad + " " * len(label), break_on_hyphens=False))
    return "\n".join(lines)


def _fusion_dict(m) -> dict:
    return {"name": m.name, "kind": "fusion", "description": m.description, "reference": m.reference,
            "aliases": [{"name": a.pattern, "tool": a.tool} for a in m.aliases],
            "parameters": [{"name": p.name, "type": p.type, "default": p.describe_default(), "required": p.required}
                           for p in m.params.values()]}


def _fusion_text(m, width: int = 100) -> str:
    pad = " " * 4
    params = ", ".join(f"{p.name} {p.type} ({p.describe_default()})" for p in m.params.values()) or "none"
    lines = [f"{m.name}  [fusion]"]
    for label, text in (("", m.description), ("parameters: ", params),
                        ("aliases: ", ", ".join(a.pattern + (f" ({a.tool})" if a.tool else "") for a in m.aliases)),
                        ("reference: ", m.reference)):
        lines.append(textwrap.fill(label + text, width=width, initial_indent=pad,
                                   subsequent_indent=pad + " " * len(label), break_on_hyphens=False))
    return "\n".join(lines)


def _trec_name_or_none(call):
    """trec_eval's name for the measure, or None when trec_eval has no such measure (RMSE, Compat...)."""
    return trec_name(call) if any(a.tool == "trec_eval" for a in call.measure.aliases) else None


def run(args) -> tuple:
    catalogue = measures()
    if args.names:
        calls = [parse(n) for n in args.names]
        if args.format == "json":
            text = json_text([{"name": c.text, "canonical": c.canonical, "trec_eval": _trec_name_or_none(c),
                               "parameters": {k: v for k, v in c.params}, "measure": _measure_dict(c.measure)}
                              for c in calls], indent=2) + "\n"
        else:
            blocks = []
            for c in calls:
                params = ", ".join(f"{k}={v}" for k, v in c.params if v is not None) or "none"
                blocks.append(f"{c.text} = {c.canonical}  (parameters: {params}; trec_eval: {_trec_name_or_none(c) or 'none'})\n"
                              + _measure_text(c.measure))
            text = "\n\n".join(blocks) + "\n"
    elif args.format == "json":
        text = json_text([_measure_dict(m) for m in catalogue.values()]
                         + [_fusion_dict(m) for m in fusion_methods().values()], indent=2) + "\n"
    elif args.format == "markdown":
        text = markdown_table() + "\n\n" + fusion_table() + "\n"
    else:
        text = (f"{len(catalogue)} measures. Names follow ir_measures (nDCG@10, P(rel=2)@5, RBP(p=0.9)); the "
                "aliases are trec_eval's and ranx's spellings.\n\n"
                + "\n\n".join(_measure_text(m) for m in catalogue.values())
                + f"\n\n{len(fusion_methods())} fusion methods (`sqlmetrics fuse`; ranx's names are aliases).\n\n"
                + "\n\n".join(_fusion_text(m) for m in fusion_methods().values()) + "\n")
    return text, None
