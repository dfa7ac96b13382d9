"""The data part of a reproduction: which corpus, direction and preparation each dataset of a table asks for, which
parse views a system reads, and the prepared folder (:func:`syntrans.prep.prepare_corpus`), shared by the tables
that prepare a corpus alike. A part of :class:`syntrans.reproduce.runner.Reproduction` (it reads ``opts``, ``runs``,
``log`` and writes ``facts``, ``parsers``, ``notes``)."""
from __future__ import annotations

import dataclasses
from typing import Dict, Optional, Tuple

from ..prep import prepare_corpus
from .config_file import ConfigError
from .published_data import data_settings
from .run_options import RunError
from .tables import LICENSED, Dataset, System


class DataRequests:
    def _data_request(self, ds: Dataset):
        """(corpus, src, tgt, raw_dir, note) for one dataset, or a reason to skip it."""
        o = self.opts
        if o.smoke and o.synthetic:
            return ("synthetic", "src", "tgt", None, f"smoke: {ds.title} replaced by the synthetic corpus (src→tgt, gold parses)")
        if o.smoke:
            pair = (ds.src, ds.tgt) if {ds.src, ds.tgt} == {"de", "en"} else ("en", "de")
            note = f"smoke: {ds.title} replaced by the first lines of {o.raw_dir} (multi30k, {pair[0]}→{pair[1]})"
            return ("multi30k", pair[0], pair[1], o.raw_dir, note)
        if ds.licensed:
            flag = LICENSED[ds.corpus]
            local = o.aspec_dir if ds.corpus == "aspec" else o.ldc_dir
            if local is None:
                return f"{ds.corpus.upper()} is licensed: pass {flag} with your copy"
            return (ds.corpus, ds.src, ds.tgt, local, None)
        return (ds.corpus, ds.src, ds.tgt, (o.raw_dir / ds.corpus) if o.raw_dir else None, None)

    def recipe(self, ds: Dataset, system: Optional[System] = None):
        """The paper's preparation of ``ds`` (None in a smoke run: the stand-in corpus keeps its own), with the
        system's data overrides (System.data) on top."""
        from ..prep.recipe import Recipe

        recipe = None if self.opts.smoke else data_settings(self.runs.key, ds.key).recipe
        overrides = dict(system.data) if system is not None else {}
        if overrides:
            known = {f.name for f in dataclasses.fields(Recipe)}
            bad = sorted(set(overrides) - known)
            if bad:
                raise RunError(f"{self.runs.key} {ds.key} {system.name}: data overrides {bad} are not recipe fields "
                               f"({', '.join(sorted(known))})")
            request = self._data_request(ds)
            if self.opts.smoke and not isinstance(request, str):
                from ..prep.corpora import CORPORA
                from ..prep.recipe import refused_for

                # a smoke run's stand-in corpus may refuse a setting the paper's corpus takes (the synthetic one comes
                # tokenized with a gold parse per line: no text setting or filter applies): left out, and said
                corpus, src, tgt = request[:3]
                for name in refused_for(CORPORA[corpus].find_pair(src, tgt), overrides):
                    value = overrides.pop(name)
                    self.notes.append(f"smoke: {system.name}'s data setting {name}={value!r} left out ({corpus} "
                                      f"{src}-{tgt} cannot take it)")
                if not overrides:
                    return recipe
            recipe = dataclasses.replace(recipe or Recipe(), **overrides)
        return recipe

    def views(self, system: System) -> Dict[str, Tuple[str, ...]]:
        """{"source": views, "target": views} of the parse ``system`` reads (:mod:`syntrans.reproduce.config_views`:
        from its config's mechanisms)."""
        from .config_views import side_views_of_config

        try:
            return side_views_of_config(self.opts.config_dir / system.config, system.extra)
        except (ValueError, ConfigError) as e:
            raise RunError(f"{system.name} ({system.config}): cannot tell which parse it reads: {e}") from None

    def prepare(self, ds: Dataset, system: Optional[System] = None, views: Optional[Dict[str, Tuple[str, ...]]] = None):
        """The prepared data of ``ds`` for ``system`` (its recipe), parsed into ``views`` ({"source": …, "target": …};
        None: both views of both sides; the views of every system sharing the data, :meth:`plan`), or a reason to
        skip it."""
        request = self._data_request(ds)
        if isinstance(request, str):
            return request
        corpus, src, tgt, raw, note = request
        recipe = self.recipe(ds, system)
        key = (ds.key, recipe)
        if key in self._prepared:
            return self._prepared[key]
        root = self.opts.data_root or (self.opts.work_dir / "data")
        # one folder per corpus, direction and recipe: tables that prepare a corpus alike share it
        out = root / (f"{corpus}.{src}-{tgt}" + (f".{recipe.digest()}" if recipe else "")
                      + (".smoke" if self.opts.smoke else ""))
        self.log(f"== data {ds.title}: {corpus} {src}→{tgt} in {out}" + (f" ({note})" if note else ""))
        launch = self.opts.launch if getattr(self.opts.launch, "launcher", "local") != "local" else None
        if views is not None:
            from ..data.parse_views import format_side_views

            self.log(f"   parse views {format_side_views(views)}: what the systems to train on it read")
        prepared = prepare_corpus(corpus=corpus, src=src, tgt=tgt, out_dir=out, raw_dir=raw, smoke=self.opts.smoke,
                                  parser=self.opts.parser, bpe_ops=None, workers=self.opts.workers, force=False, log=self.log,
                                  smoke_sizes=self.opts.smoke_sizes, recipe=recipe, views=views, launch=launch,
                                  parse_shards=self.opts.parse_shards)
        parsers = ", ".join(f"{k}: {v}" for k, v in sorted(prepared.parsers.items()))
        which = ds.title + (f" ({system.name}'s data)" if system is not None and system.data else "")
        self.facts[which] = (f"{corpus} {src}→{tgt}, sizes {prepared.sizes}, parsers {parsers}"
                             + (", lowercased" if prepared.lowercase else "")
                             + (f", the preparation {recipe.digest()}: {recipe}" if recipe else ""))
        if note:
            self.notes.append(note)
        paper = data_settings(self.runs.key, ds.key)
        self.parsers[ds.title] = (f"ours: {parsers} (syntrans-prepare --parser {self.opts.parser}); the paper's: "
                                  f"{paper.parser} ({paper.source('parser')})")
        self._prepared[key] = prepared
        return prepared
