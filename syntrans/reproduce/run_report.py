"""The report part of a reproduction: the results file of any kind of table (scores, curve and length figures,
gate maps, training times, the cross-paper table), its header (protocol, parsers, signatures, significance) and
footer (data, notes, command, Deviations), written atomically. A part of
:class:`syntrans.reproduce.runner.Reproduction`."""
from __future__ import annotations

from pathlib import Path
from typing import List

from ..atomic_write import write_text
from .deviations import deviation_lines
from .parser_report import parser_score_lines
from .results_tables import results_markdown
from .run_options import RunError
from .tables import TABLES, Table


class Reporting:
    def write(self, outcomes, minutes: float) -> Path:
        o, t = self.opts, self.table
        header = []
        if o.smoke:
            header.append(f"**Smoke run** (`--smoke`): a tiny slice of text and a tiny model trained {o.smoke_updates} updates; "
                          "the pipeline is the real one, the numbers are not comparable with the published ones.")
        if t.runs_of:
            header.append(f"Drawn from the runs of `{t.runs_of}` ({TABLES[t.runs_of].paper}): the same work folders, "
                          "trained there or here, whichever ran first.")
        if self.decodes:
            header.append(f"Decoded ({t.split} set) with each config's `# decode:` flags; sacreBLEU on Moses-detokenized "
                          "output against the raw references. Seeds and checkpoint per dataset:")
        else:
            header.append("Read from the training logs of every run. Seeds and checkpoint per dataset:")
        header += [f"- {k}: {v}" for k, v in self.protocols.items()]
        if self.parsers:
            header.append("Parsers (ours and the paper's; parses differ between parsers, and so can BLEU: "
                          "docs/reproduce.md, Parsers):")
            header += [f"- {k}: {v}" for k, v in self.parsers.items()]
        if self.selection == "default":
            header.append(f"Systems: the table's default, {', '.join(t.default_systems)} (`--systems all` runs every "
                          "system; `--systems NAMES` any of them).")
        for sig in sorted(self.signatures):
            header.append(f"sacreBLEU signature: `{sig}`")
        for sig in sorted(self.chrf_signatures):
            header.append(f"chrF++ signature (sacreBLEU CHRF, word_order=2): `{sig}`")
        for metric, description in self.test_descriptions.items():
            header.append(f"Significance{'' if metric == 'BLEU' else f' ({metric})'}: {description}")
        footer = [f"- data, {k}: {v}" for k, v in self.facts.items()] + [f"- {n}" for n in dict.fromkeys(self.notes)]
        footer.append(f"- wall time of this run: {minutes:.1f} min (finished steps of earlier runs are skipped, not counted)")
        footer.append(f"- command: `{o.command or 'syntrans-reproduce ' + o.table}`")
        footer += deviation_lines(t, self.runs, o.datasets, o.smoke)  # every label of the data record the run read
        out_dir = o.results_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{o.table}.md"
        below = parser_score_lines(o.parser_scores, self.parser_scores) if self.parser_scores is not None else []
        write_text(path, render(t, self.runs, outcomes, header, footer, out_dir, below))
        return path



def render(table: Table, runs: Table, outcomes, header: List[str], footer: List[str], out_dir: Path,
           below: List[str] = ()) -> str:
    """The results file of any kind of table (figures also write their PNG into ``out_dir``); ``below``: lines under
    the table (the parsers' scores): right under the cross kind's tables, else before the footer."""
    if table.kind == "cross":
        from .cross import cross_markdown

        return cross_markdown(table, outcomes, header, footer, out_dir / f"{table.key}.png", below=list(below))
    footer = list(below) + list(footer)
    if table.kind in ("bleu", "curve"):
        text = results_markdown(table, outcomes, header, footer)
        if table.kind == "curve":
            from .figures import curve_figure

            text += curve_figure(table, outcomes, out_dir / f"{table.key}.png")
        return text
    if table.kind == "time":
        from .timing import time_markdown

        return time_markdown(table, outcomes, header, footer)
    if table.kind == "length":
        from .figures import length_markdown

        return length_markdown(table, outcomes, header, footer, out_dir / f"{table.key}.png")
    if table.kind == "gates":
        from .figures import gates_markdown

        return gates_markdown(table, outcomes, header, footer, out_dir / f"{table.key}.png")
    raise RunError(f"{table.key}: unknown kind {table.kind!r}")
