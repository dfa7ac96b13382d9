"""The scoring part of a reproduction: each row's seeds and checkpoint, the paper's scoring (case, sacreBLEU
tokenizer), one run decoded by fairseq-generate and scored (BLEU; RIBES and chrF++ where the table reports them;
the hypotheses and the score file written atomically), and every system's seeds tested against the row's reference
with sacreBLEU's paired bootstrap. A part of :class:`syntrans.reproduce.runner.Reproduction` (it reads ``opts``,
``table``, ``runs``, ``user_dir``, ``log`` and writes ``signatures``, ``protocols``, ``test_descriptions``)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..atomic_write import write_text
from .config_file import ArgsFile
from .published import protocol
from .published_data import data_settings
from .run_commands import _tool
from .run_options import RunError
from .scoring import bleu, chrf, detokenize, generate_hypotheses, ribes
from .significance import paired_bootstrap
from .tables import Dataset


class Scoring:
    def evaluation(self, prepared, ds: Dataset) -> Tuple[bool, Optional[str]]:
        """(lowercase, sacreBLEU tokenizer) of the paper's scoring (e.g. character BLEU for Japanese and Chinese,
        case-insensitive for English: Ma et al.); a smoke run scores case-insensitively where its data is lowercased.
        A paper that scores case-sensitively on lowercased data (Hou et al., gated, §5.1) gets exactly that: the
        references are the lowercased text, the signature says ``case:mixed``."""
        if self.opts.smoke:
            return prepared.lowercase, None
        paper = data_settings(self.runs.key, ds.key).evaluation
        return paper.lowercase, paper.tokenize

    def references(self, prepared, split: str) -> Path:
        return prepared.ref_test if split == "test" else Path(prepared.out_dir) / "ref" / f"{split}.{prepared.tgt}"

    def score(self, prepared, cfg: ArgsFile, ckpt: Path, run_dir: Path, label: str, ds: Dataset) -> dict:
        """Decode the table's split with ``ckpt`` and score it: {"bleu", "signature", "checkpoint", "hyps", "refs",
        and "ribes", "ribes_signature" where the table reports RIBES, "chrf", "chrf_signature" where it reports
        chrF++}; skipped when the score file is newer than the checkpoint and holds every score the table reports (a
        score file of an earlier run without chrF++ is scored again from its hypotheses, not decoded again)."""
        split = self.table.split
        tag = ckpt.stem if split == "test" else f"{split}.{ckpt.stem}"  # test files keep their earlier names
        score_file = run_dir / f"score.{tag}.json"
        hyp_file = run_dir / f"hyp.{tag}.detok.txt"
        ribes_wanted, chrf_wanted = self.table.ribes, self.table.chrf
        if score_file.exists() and score_file.stat().st_mtime >= ckpt.stat().st_mtime:
            result = json.loads(score_file.read_text(encoding="utf-8"))
            if (not ribes_wanted or "ribes" in result) and (not chrf_wanted or "chrf" in result):
                self.log(f"   [{label}] decoded and scored before: skipped (BLEU {result['bleu']:.2f})")
                self.signatures.add(result["signature"])
                return result
        ref_path = self.references(prepared, split)
        refs = Path(ref_path).read_text(encoding="utf-8").splitlines()
        more_paths = [str(x) for x in getattr(prepared, "ref_test_more", None) or []] if split == "test" else []
        more_refs = [Path(x).read_text(encoding="utf-8").splitlines() for x in more_paths]
        if not hyp_file.exists() or hyp_file.stat().st_mtime < ckpt.stat().st_mtime:
            gen = run_dir / f"generate.{tag}.txt"
            cmd = [_tool("fairseq-generate"), str(prepared.data_bin), "--user-dir", self.user_dir, "--task",
                   "syntax_translation", "--gen-subset", split, "--path", str(ckpt), *cfg.decode, "--batch-size", "64",
                   "--remove-bpe", "--num-workers", "0", *self.opts.generate_args]
            self.log(f"   [{label}] fairseq-generate --gen-subset {split} {' '.join(cfg.decode)}")
            log_name = "generate.log" if split == "test" else f"generate.{split}.log"
            with open(gen, "w", encoding="utf-8") as out, open(run_dir / log_name, "w", encoding="utf-8") as err:
                code = subprocess.call(cmd, stdout=out, stderr=err)
            if code != 0:
                raise RunError(f"[{label}] fairseq-generate failed (exit {code}); see {run_dir / log_name}; "
                               f"command:\n  {' '.join(cmd)}")
            hyps = detokenize(generate_hypotheses(gen, len(refs)), prepared.tgt)
            write_text(hyp_file, "".join(h + "\n" for h in hyps))
        hyps = hyp_file.read_text(encoding="utf-8").splitlines()
        lowercase, tokenize = self.evaluation(prepared, ds)
        value, signature = bleu(hyps, refs, prepared.tgt, lowercase=lowercase, tokenize=tokenize, more_refs=more_refs)
        self.signatures.add(signature)
        result = {"bleu": value, "signature": signature, "checkpoint": str(ckpt), "split": split, "hyps": str(hyp_file),
                  "refs": str(ref_path), "more_refs": more_paths, "lowercase": lowercase, "tokenize": tokenize}
        message = f"sacreBLEU {value:.2f}  ({signature})"
        if ribes_wanted:
            result["ribes"], result["ribes_signature"] = ribes(hyps, refs, prepared.tgt, tokenize=tokenize)
            message += f"; RIBES {result['ribes']:.2f}"
        if chrf_wanted:
            result["chrf"], result["chrf_signature"] = chrf(hyps, refs, lowercase, more_refs=more_refs)
            message += f"; chrF++ {result['chrf']:.2f}"
        write_text(score_file, json.dumps(result, indent=1))
        self.log(f"   [{label}] {message}")
        return result

    def protocol(self, ds: Dataset):
        """(seeds, N of the last N checkpoints averaged or None) of one row: the options', else the paper's."""
        paper = protocol(self.runs.key, ds.key)
        smoke = self.opts.smoke  # a smoke run: one seed and checkpoint_best.pt unless asked otherwise
        seeds = self.opts.seeds or ([1] if smoke else list(range(1, paper.seeds + 1)))
        average_last = self.opts.average_last
        if average_last is None and paper.checkpoint.startswith("last ") and not smoke:
            average_last = int(paper.checkpoint.split()[1])
        last = average_last is None and paper.checkpoint == "last" and not smoke
        self.last_checkpoint[ds.key] = last
        self.protocols[ds.title] = (f"seeds {', '.join(map(str, seeds))}; "
                                    + (f"the average of the last {average_last} epoch checkpoints" if average_last
                                       else "checkpoint_last.pt (the end of training)" if last
                                       else "checkpoint_best.pt (smallest validation loss)")
                                    + f" (the paper: {paper.seeds} run{'s' if paper.seeds > 1 else ''}, "
                                      f"{paper.checkpoint}; {paper.where})")
        return seeds, average_last

    def summarise(self, outcomes: Dict[tuple, dict]) -> None:
        """Per (dataset, system): the scores per seed, and the paired bootstrap against the row's reference (of BLEU:
        "scores", "p_values"; of chrF++ where the table reports it: "chrf", "chrf_p_values")."""
        for row in self.runs.rows:
            ref = outcomes.get((row.dataset.key, row.systems[0].name), {})
            for s in row.systems:
                got = outcomes.get((row.dataset.key, s.name))
                if not got or "results" not in got:
                    continue
                results = got["results"]
                if self.decodes:
                    got["scores"] = [r["bleu"] for r in results]
                    if self.table.ribes:
                        got["ribes"] = [r["ribes"] for r in results]
                    if self.table.chrf:
                        got["chrf"] = [r["chrf"] for r in results]
                    if s is not row.systems[0] and ref.get("results"):
                        got["p_values"] = self.significance(row.dataset, got, ref)
                        if self.table.chrf:
                            got["chrf_p_values"] = self.significance(row.dataset, got, ref, metric="chrF++")

    def significance(self, ds: Dataset, got: dict, ref: dict, metric: str = "BLEU") -> List[float]:
        """sacreBLEU's paired bootstrap (Koehn 2004) of ``metric`` (BLEU, or chrF++) of each seed of a system against
        the same seed of the row's reference system (seeds the reference lacks are not tested)."""
        p_values = []
        by_seed = dict(zip(ref["seeds"], ref["results"]))
        lowercase, tokenize = self.evaluation(got["prepared"], ds)
        for seed, result in zip(got["seeds"], got["results"]):
            if seed not in by_seed:
                continue
            base = by_seed[seed]
            refs = Path(result["refs"]).read_text(encoding="utf-8").splitlines()
            if Path(base["refs"]).read_text(encoding="utf-8").splitlines() != refs:
                raise RunError(f"{ds.key}: the systems were scored on different references ({base['refs']}, "
                               f"{result['refs']}): no paired test")
            more = [Path(x).read_text(encoding="utf-8").splitlines() for x in result.get("more_refs", [])]
            p, description = paired_bootstrap(Path(base["hyps"]).read_text(encoding="utf-8").splitlines(),
                                              Path(result["hyps"]).read_text(encoding="utf-8").splitlines(), refs,
                                              got["prepared"].tgt, lowercase, tokenize=tokenize, more_refs=more,
                                              metric=metric)
            self.test_descriptions[metric] = description
            p_values.append(p)
        return p_values
