"""``objective-score ab report``: one comparison as Markdown and a self-contained HTML page.

Two plots (matplotlib, drawn off-screen and embedded as PNG data): each arm's resolve rate
per seed with its interval, and cost against resolve rate with 95% error bars on both axes
(the cost bar from the recorded per-run cost distribution, :func:`cost_bars`). pass@k is
printed with its interval (:func:`pass_at_k_intervals`), the delta with the primary test's, each
arm's cost totals with the number of runs times the interval of the mean per run
(:func:`total_text`) and the variance over seeds with its χ² interval (:func:`variance_text`).
One comparison is one benchmark in one metric space: the report never averages it with anything
else.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any, Mapping


def _plots(output: Mapping[str, Any]) -> dict[str, bytes]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from .errors import CommandError

        raise CommandError("ab report draws its plots with matplotlib: pip install 'pytest-objective-scoring[stats]'") from None
    record, details = output["record"], output["details"]
    tasks = details["tasks"]
    images = {}
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    for offset, arm in zip((-0.08, 0.08), record["arms"]):
        seeds = list(range(len(record["seeds"])))
        rates = [r / tasks for r in arm["resolved"]]
        axes.plot([s + offset for s in seeds], rates, "o", label=f"{arm['name']} (per seed)")
        low, high = arm["confidence_interval"]
        axes.errorbar([len(seeds) + offset], [arm["mean"]], yerr=[[arm["mean"] - low], [high - arm["mean"]]], fmt="s",
                      capsize=4, label=f"{arm['name']} mean, interval")  # fmt: skip
    axes.set_xticks(list(range(len(record["seeds"]) + 1)), [str(s) for s in record["seeds"]] + ["mean"])
    axes.set_xlabel("seed")
    axes.set_ylabel("resolve rate")
    axes.set_ylim(-0.05, 1.05)
    axes.legend(fontsize="small")
    axes.set_title("resolve rate per seed, with the arms' intervals")
    images["resolve_rates.png"] = _png(figure, plt)
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    bars = cost_bars(output)
    for arm in record["arms"]:
        bar = bars[arm["name"]]
        x, (x_low, x_high) = bar["dollars_per_seed"], bar["dollars_interval"] or (None, None)
        y, (y_low, y_high) = arm["mean"], arm["confidence_interval"]
        x_err = [[max(0.0, x - x_low)], [max(0.0, x_high - x)]] if x is not None and x_low is not None else None
        axes.errorbar([x if x is not None else float("nan")], [y], xerr=x_err, yerr=[[max(0.0, y - y_low)], [max(0.0, y_high - y)]],
                      fmt="o", markersize=9, capsize=4)  # fmt: skip
        axes.annotate(arm["name"], (x if x is not None else float("nan"), y), textcoords="offset points", xytext=(6, 6))
    axes.set_xlabel("dollars per seed (all tasks)")
    axes.set_ylabel("mean resolve rate")
    missing = [name for name, bar in bars.items() if bar["dollars_interval"] is None]
    axes.set_title("cost against resolve rate, 95% intervals" + (f" (no cost interval: {', '.join(missing)})" if missing else ""),
                   fontsize="medium")  # fmt: skip
    images["cost_vs_resolve.png"] = _png(figure, plt)
    return images


def cost_bars(output: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per arm, the cost plot's point and error bars: dollars per seed and its 95% interval. With a
    recorded per-run distribution of the dollars (``details["cost_distribution"][arm]["dollars"]``,
    :func:`.ab_inference.cost_distributions`: a bootstrap over tasks) that knows every run's dollars,
    both are its mean per run and interval times the tasks a seed runs (the same number as the arm's
    dollars over its seeds); otherwise the point is the arm's dollars over its seeds with no bar, and
    ``why`` says why. The resolve rate's bar is the arm's own interval."""
    record, details = output["record"], output["details"]
    seeds, tasks = len(record["seeds"]), details["tasks"]
    recorded = details.get("cost_distribution") or {}
    bars = {}
    for arm in record["arms"]:
        dollars = arm["cost"]["dollars"]
        found = (recorded.get(arm["name"]) or {}).get("dollars")
        bar: dict[str, Any] = {"dollars_per_seed": dollars / seeds if dollars is not None and seeds else None,
                               "dollars_interval": None, "why": "no per-run cost distribution recorded with the comparison"}  # fmt: skip
        if found and found.get("unknown"):
            bar["why"] = f"dollars unknown for {found['unknown']} run(s)"
        elif found and found.get("interval") is None:
            bar["why"] = found.get("note") or "no interval"
        elif found and dollars is not None:
            bar.update(dollars_per_seed=found["mean"] * tasks, why=None,
                       dollars_interval=[found["interval"][0] * tasks, found["interval"][1] * tasks])
        bars[arm["name"]] = bar
    return bars


def pass_at_k_intervals(output: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per arm and k, pass@k with its 95% interval: ``details["pass_at_k_intervals"]`` when the
    comparison recorded them, else the same computation from the recorded per-task counts
    (:func:`.ab_inference.pass_at_k_interval`: the unbiased estimator per task, a Clopper-Pearson
    interval over tasks), so the report and the JSON agree."""
    from .ab_inference import pass_at_k_interval

    record, details = output["record"], output["details"]
    if details.get("pass_at_k_intervals"):
        return dict(details["pass_at_k_intervals"])
    seeds = len(record["seeds"])
    alpha = (details.get("test") or {}).get("alpha", 0.05)
    out: dict[str, dict[str, Any]] = {}
    for arm, values in details["pass_at_k"].items():
        counts = [(seeds, int(c)) for c in (details.get("per_task_resolved_seeds") or {}).get(arm, {}).values()]
        out[arm] = {name: pass_at_k_interval(counts, int(name.split("@", 1)[1]), alpha) for name in values}
    return out


def _methods(intervals: Mapping[str, Mapping[str, Any]]) -> str:
    """How the pass@k intervals were made, once each, as recorded with them (``method``)."""
    found = dict.fromkeys(str(one["method"]) for per_arm in intervals.values() for one in per_arm.values()
                          if isinstance(one, Mapping) and one.get("method"))  # fmt: skip
    return "; ".join(found) or "not recorded"


def _interval_text(found: Mapping[str, Any] | None, spec: str) -> str:
    """" [low, high]" or " (n/a: one task)"; nothing without a record."""
    if not found:
        return ""
    if found.get("interval") is None:
        return f" ({found.get('note') or 'n/a'})"
    low, high = found["interval"]
    return f" [{format(low, spec)}, {format(high, spec)}]"


def _png(figure: Any, plt: Any) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


def markdown(output: Mapping[str, Any], images: Mapping[str, str] | None = None) -> str:
    record, details = output["record"], output["details"]
    result, test = record["result"], details["test"]
    kinds = {a["name"]: a["kind"] for a in details["arm_kinds"]}
    intervals = pass_at_k_intervals(output)
    alpha = float(test.get("alpha") or 0.05)
    lines = [
        f"# A/B comparison: {output['name']}",
        "",
        f"**Change under test:** {record['change_under_test']}",
        "",
        f"**Claim level supported: {details['claim']}** (recomputed from the ledger when this report was written)",
        "",
        *([f"**Downgraded** from {details['claim_downgraded']['from']} (when the comparison was written) to "
           f"{details['claim_downgraded']['to']}: " + "; ".join(details["claim_downgraded"]["because"]), ""]
          if details.get("claim_downgraded") else []),
        *[f"- {reason}" for reason in details["claim_reasons"]],
        "",
        f"Benchmark `{details['benchmark']['id']}` revision `{details['benchmark']['revision']}`, metric space "
        f"`{details['benchmark']['metric_space']}`; task set `{details['task_set']}` ({details['tasks']} tasks); "
        f"seeds {', '.join(map(str, record['seeds']))}. This report covers this one benchmark: its numbers are never "
        "averaged with another benchmark's or another metric space's.",
        "",
        "## Frozen configuration",
        "",
        "| field | value |",
        "|---|---|",
        *[f"| `{key}` | `{value}` |" for key, value in record["frozen"].items()],
        "",
        "## Arms",
        "",
        (f"Every number with its {1 - alpha:.0%} interval: the mean resolve rate's is Wilson's over the tasks; the "
         "variance of the per-seed rates, a χ² interval (scipy.stats.chi2; it assumes normal per-seed rates); each cost, "
         "a total over every run of the arm, the number of runs times the interval of the mean cost per run (a seeded "
         "bootstrap over tasks, the section below)."),
        "",
        "| arm | kind | harness | resolved per seed | mean | variance over seeds | interval | tokens | calls | CPU s | wall s | dollars |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm in record["arms"]:
        cost, spread = arm["cost"], (details.get("cost_distribution") or {}).get(arm["name"])
        low, high = arm["confidence_interval"]
        totals = [total_text(cost.get(name), (spread or {}).get(name), spec)
                  for name, spec in (("tokens", "d"), ("calls", "d"), ("cpu", ".2f"), ("wall_time", ".2f"), ("dollars", ".4f"))]  # fmt: skip
        lines.append(
            f"| {arm['name']} | {kinds[arm['name']]} | `{arm['harness_version']}` | {' '.join(map(str, arm['resolved']))} | "
            f"{arm['mean']:.1%} | {variance_text(arm['variance'], len(arm['resolved']), alpha)} | [{low:.1%}, {high:.1%}] | "
            + " | ".join(totals) + " |"
        )
    p_value = "n/a" if test["p_value"] is None else f"{test['p_value']:.4g}"
    delta_interval = (f" [{test['interval'][0]:+.1%}, {test['interval'][1]:+.1%}] ({1 - alpha:.0%} interval, the primary "
                      "test's model)" if test.get("interval") else " (no interval recorded)")  # fmt: skip
    lines += [
        "",
        "## Result",
        "",
        f"- delta (candidate − baseline, mean resolve rate): **{result['delta']:+.1%}**{delta_interval}",
        f"- significant: **{result['significant']}** — {test['test']}, p = {p_value}, alpha = {test['alpha']}"
        + (f"; interval of delta [{test['interval'][0]:+.1%}, {test['interval'][1]:+.1%}] from the same model"
           if test.get("interval") else ""),
        *[f"- secondary view, not decided on: {view['test']}: p = {_num(view.get('p_value'), '.4g')} (assumes "
          f"{view['assumes']})" for view in (test.get("secondary") or {}).values()],
        *([f"- paired t-test over the per-seed rates: p = {test['t_test_over_seeds']['p_value']:.4g}"]
          if test.get("t_test_over_seeds") else []),
        *([f"- {details['power']['statement']}"] if (details.get("power") or {}).get("statement") else []),
        f"- access, as declared in the manifest (a statement of the researcher, not observed by the grader): {access_text(details)}",
        *[f"- excluded (failed the cutoff gate): {t['instance_id']}: {'; '.join(t['why'])}"
          for t in details.get("excluded_tasks") or []],
        f"- recommendation: **{result['recommendation']}** — {details['recommendation_because']}",
        *[f"- not admissible: {reason}" for reason in details["inadmissible_because"]],
        "",
        f"pass@k (unbiased estimator over the seeds as samples per task; {1 - alpha:.0%} interval: {_methods(intervals)}): "
        + "; ".join(f"{arm}: " + ", ".join(f"{k} {_num(v, '.1%')}{_interval_text(intervals.get(arm, {}).get(k), '.1%')}"
                                           for k, v in values.items())
                    for arm, values in details["pass_at_k"].items()),  # fmt: skip
        "",
        *_against_gold_lines(details),
        *_cost_lines(details),
    ]
    family = details.get("family") or {}
    if family.get("members"):
        lines += [f"## Every experiment on this change ({family['experiments']})", "",
                  f"{family['correction']}. Nulls and rejections are listed: a claim counts them all.", "",
                  "| experiment | benchmark | status | delta [interval] | recommendation | p | Holm p |", "|---|---|---|---|---|---|---|"]  # fmt: skip
        for member in family["members"]:
            lines.append(f"| {member['name']} | `{member['benchmark']}` | {member['status']} | {_num(member['delta'], '+.1%')}"
                         f"{_member_interval(member, details, output.get('name'))} | {member['recommendation'] or '-'} | "
                         f"{_num(member['p_value'], '.4g')} | {member['holm_p_value']:.4g} |")  # fmt: skip
        lines.append("")
    if images:
        lines += ["## Plots", "", *[f"![{name}]({src})" for name, src in images.items()], ""]
    return "\n".join(lines)


def _member_interval(member: Mapping[str, Any], details: Mapping[str, Any], name: Any) -> str:
    """A family member's delta interval: its own (``member["interval"]``, the primary test's, when the
    family records it), this comparison's own test interval for this comparison, else why there is none."""
    interval = member.get("interval")
    if interval is None and member.get("name") == name:
        interval = (details.get("test") or {}).get("interval")
    if member.get("delta") is None:
        return ""
    if interval is None:
        return " (interval not recorded)"
    return f" [{interval[0]:+.1%}, {interval[1]:+.1%}]"


def total_text(total: Any, found: Mapping[str, Any] | None, spec: str) -> str:
    """An arm's total of a cost quantity over its runs with its interval: the number of runs times the
    interval of the mean per run (``found``, the recorded per-run distribution,
    :func:`.ab_inference.distribution`: a bootstrap over tasks), "12.40 [9.10, 16.02]"; or why it
    has none: no distribution recorded, a run whose value is unknown, one task, or a recorded
    distribution that does not sum to this total (it describes other runs)."""
    if total is None:
        return "n/a"
    shown = format(total, spec)
    if not found:
        return f"{shown} (no interval: no per-run cost distribution recorded)"
    if found.get("unknown"):
        return f"{shown} (no interval: unknown for {found['unknown']} run(s))"
    if found.get("interval") is None:
        return f"{shown} ({found.get('note') or 'n/a'})"
    runs, mean = int(found["n"]), float(found["mean"])
    if abs(mean * runs - float(total)) > 1e-6 * max(1.0, abs(float(total))):
        return f"{shown} (no interval: the recorded per-run costs do not sum to this total)"
    low, high = (float(v) * runs for v in found["interval"])
    return f"{shown} [{format(low, spec if spec != 'd' else '.0f')}, {format(high, spec if spec != 'd' else '.0f')}]"


MAX_RATE_VARIANCE = 0.25  # the largest variance a rate in [0, 1] can have


def variance_text(variance: float | None, seeds: int, alpha: float) -> str:
    """The variance of the per-seed resolve rates with its 1 − alpha χ² interval
    ((S − 1)·v / χ²_{1−alpha/2, S−1}, (S − 1)·v / χ²_{alpha/2, S−1}; scipy.stats.chi2, normal
    per-seed rates assumed), its upper end cut at 1/4 (no rate in [0, 1] varies more), or why it
    has none: one seed, or every seed resolving the same number of tasks (no spread: a χ²
    interval would be [0, 0])."""
    from scipy import stats  # type: ignore[import-untyped]

    if variance is None or seeds < 2:
        return "n/a: one seed"
    if variance <= 0:
        return "0 (n/a: every seed resolved the same number of tasks; no spread to bound)"
    df = seeds - 1
    low = min(MAX_RATE_VARIANCE, df * variance / float(stats.chi2.ppf(1 - alpha / 2, df)))
    high = min(MAX_RATE_VARIANCE, df * variance / float(stats.chi2.ppf(alpha / 2, df)))
    return f"{variance:.4f} [{low:.4f}, {high:.4f}]"


QUANTITIES = (("dollars", "dollars", ".4g"), ("cpu", "CPU s", ".4g"), ("wall_time", "wall s", ".4g"),
              ("tokens", "tokens", ".6g"), ("calls", "calls", ".4g"))  # fmt: skip


def _against_gold_lines(details: Mapping[str, Any]) -> list[str]:
    """``ab run --against-gold``: each arm's resolved count beside resolved and free of regressions
    against gold (docs/against-gold.md); nothing when the gradings did not ask for it."""
    arms = {arm: check for arm, check in (details.get("against_gold") or {}).items() if check}
    if not arms:
        return []
    return ["## Resolved, and free of regressions against gold", "",
            ("A second figure beside the comparison, never in it: for each resolved run, the tests beyond the listed "
             "ones were run under the candidate and under gold; a test gold passes and the run does not, confirmed by "
             "a second run, is a regression. Unknown: the check could not finish (never counted as clean)."), "",
            "| arm | runs | resolved | resolved and free of regressions | with regressions | unknown |",
            "|---|---|---|---|---|---|",
            *[f"| {arm} | {c['graded']} | {c['resolved']} | {c['resolved_against_gold']} | {c['regressions']} | {c['unknown']} |"
              for arm, c in arms.items()], ""]  # fmt: skip


def _cost_lines(details: Mapping[str, Any]) -> list[str]:
    """The per-run cost distribution of each arm (mean, its 95% interval, sd, median, p10, p90), when
    the comparison recorded one (``details["cost_distribution"]``)."""
    recorded = details.get("cost_distribution") or {}
    if not recorded:
        return []
    lines = ["## Cost per run (distribution over runs; 95% interval of the mean: a bootstrap over tasks)", "",
             "| arm | quantity | runs | mean [interval] | sd | median | p10 | p90 | unknown |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for arm, quantities in recorded.items():
        for name, label, spec in QUANTITIES:
            found = quantities.get(name)
            if found:
                lines.append(f"| {arm} | {label} | {found['n']} | {_num(found['mean'], spec)}{_interval_text(found, spec)} | "
                             f"{_num(found['sd'], spec)} | {_num(found['median'], spec)} | {_num(found['p10'], spec)} | "
                             f"{_num(found['p90'], spec)} | {found.get('unknown', 0)} |")  # fmt: skip
    return [*lines, ""]


def access_text(details: Mapping[str, Any]) -> str:
    """Each arm's declared access, in one line."""
    parts = []
    for arm in details.get("arm_kinds") or []:
        access = arm.get("access")
        if access is None:
            parts.append(f"{arm['name']}: undeclared")
        else:
            reached = [k.replace("_", " ") for k, v in access.items() if v]
            parts.append(f"{arm['name']}: " + (", ".join(reached) if reached else "none of network, repository history, "
                                              "hidden tests, gold"))  # fmt: skip
    return "; ".join(parts) or "not recorded"


def _num(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def write_report(output: Mapping[str, Any], out: Path) -> list[Path]:
    """Write ``report.md`` (plots beside it as PNG files) and ``report.html`` (plots inline), all or
    none (:func:`write_all`)."""
    images = _plots(output)
    inline = {name: "data:image/png;base64," + base64.b64encode(data).decode("ascii") for name, data in images.items()}
    files: dict[str, str | bytes] = {"report.md": markdown(output, {name: name for name in images}),
                                     "report.html": _html(markdown(output), inline, output["name"]), **images}  # fmt: skip
    return write_all(out, files)


def write_all(out: Path, files: Mapping[str, str | bytes]) -> list[Path]:
    """Write every file of ``files`` into the folder ``out`` (made if missing), all or none: each is first
    written whole beside its place under a hidden name (:func:`.atomic.write_whole`: a temporary
    file, fsynced, renamed), and only when every one is on the disk are they renamed into place. A full disk (any
    ``OSError``) leaves no 0-byte, truncated or hidden file, the files that were there as they were,
    and no folder this call made; the error is raised."""
    import os
    import secrets

    from .atomic import write_whole

    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    tail = f".{os.getpid()}.{secrets.token_hex(4)}.staged"
    staged: list[tuple[Path, Path]] = []
    try:
        for name, data in files.items():
            target = out / name
            target = Path(os.path.realpath(target)) if target.is_symlink() else target  # a link keeps being a link
            hidden = target.with_name(f".{target.name}{tail}")
            write_whole(hidden, data)
            staged.append((hidden, target))
        for hidden, target in staged:
            os.replace(hidden, target)
    except BaseException:
        for hidden, _ in staged:
            hidden.unlink(missing_ok=True)
        if made:
            try:
                out.rmdir()  # only when empty: nothing of anyone else's goes
            except OSError:
                pass
        raise
    return [out / name for name in files]


def _html(text: str, images: Mapping[str, str], name: str) -> str:
    """The Markdown as plain HTML: headings, lists, tables and paragraphs (no external assets)."""
    body: list[str] = []
    rows: list[list[str]] = []

    def flush_table() -> None:
        if rows:
            head, *rest = rows
            body.append("<table><thead><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr></thead><tbody>"
                        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rest) + "</tbody></table>")  # fmt: skip
            rows.clear()

    def inline(s: str) -> str:
        s = html.escape(s)
        parts = s.split("**")
        s = "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(parts))
        parts = s.split("`")
        return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))

    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not all(set(c) <= {"-"} for c in cells):
                rows.append([inline(c) for c in cells])
            continue
        flush_table()
        if line.startswith("# "):
            body.append(f"<h1>{inline(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{inline(line[3:])}</h2>")
        elif line.startswith("- "):
            body.append(f"<ul><li>{inline(line[2:])}</li></ul>")
        elif line.strip():
            body.append(f"<p>{inline(line)}</p>")
    flush_table()
    body.append("<h2>Plots</h2>")
    body += [f'<figure><img alt="{html.escape(n)}" src="{src}"><figcaption>{html.escape(n)}</figcaption></figure>'
             for n, src in images.items()]  # fmt: skip
    style = ("body{font-family:sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
             "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.25rem .5rem}"
             "code{background:#f3f3f3}img{max-width:100%}")  # fmt: skip
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>A/B {html.escape(name)}</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")  # fmt: skip
