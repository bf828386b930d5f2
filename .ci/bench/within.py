#!/usr/bin/env python3
"""Asking within some documents (--only): how well, and how fast.

Quality (default): a corpus of ../shared/bench/data split into folders, each question asked within the
folder that holds its answer, three ways:
  within      --only /FOLDER on the whole corpus (the filter inside the search)
  fresh       a fresh index of that folder alone (rag.py --docs FOLDER)
  after       the whole corpus's top k, then the hits outside the folder dropped (a filter after ranking)
Splits: JaQuAD by article (ids de-NNN-..), 20 folders of whole articles; ArguAna by debate category (ids
test-CATEGORY-..); SciFact at random (seeded), 10 folders. Only questions whose relevant documents all lie
in one folder count. Metrics as retrieval.py computes them (nDCG@10, MRR@10, Recall@100), and how many
questions get the same top 10 within as fresh.

Speed (--speed): the 16-copy folder of scale.py (105,824 files, 149 MB), index kept in /tmp/ragbench-within;
in one process, ms a question (200 SciFact + 200 JaQuAD questions) within terms that keep 1% to 100% of the
chunks, and the time to make a filter the first time its terms are asked.

  python3 .ci/bench/within.py [--data jaquad-dev arguana-dev scifact-train]
  python3 .ci/bench/within.py --speed
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(PROJECT, "..", "shared", "bench")
sys.path.insert(0, BENCH)
import retrieval  # noqa: E402

ROOT = os.path.join(tempfile.gettempdir(), "ragbench-within")
RAG = [sys.executable, os.path.join(PROJECT, "rag.py"), "--search", "--json", "--no-cache", "--mode", "lexical"]


def folder_of(name, doc_id, seed=1):
    """The folder a document goes to."""
    if name == "jaquad-dev":
        return "article%02d" % (int(doc_id.split("-")[1]) % 20)
    if name == "arguana-dev":
        return doc_id.split("-")[1]
    return "part%02d" % random.Random(f"{seed}-{doc_id}").randrange(10)


def split(name, corpus):
    """Write the corpus into its folders; return {doc id: folder}."""
    where = {doc_id: folder_of(name, doc_id) for doc_id in corpus}
    top = os.path.join(ROOT, name)
    if not os.path.exists(os.path.join(top, ".complete")):
        for doc_id, (title, text) in corpus.items():
            os.makedirs(os.path.join(top, where[doc_id]), exist_ok=True)
            with open(os.path.join(top, where[doc_id], doc_id + ".txt"), "w", encoding="utf-8") as f:
                f.write((title + "\n\n" + text) if title else text)
        open(os.path.join(top, ".complete"), "w").close()
    return where


def rankings(docs, lines, k):
    """Run rag.py on the lines (questions, and /only commands); return each question's documents in order,
    a hit's copies right after it."""
    run = subprocess.run(RAG + ["--docs", docs, "-k", str(k)], input="\n".join(lines) + "\n", capture_output=True,
                         text=True, encoding="utf-8")
    if run.returncode:
        sys.exit(f"rag.py failed: {run.stderr[-1000:]}")
    ranked = []
    for line in run.stdout.splitlines():
        hits, seen, docs_in_order = json.loads(line)["hits"], set(), []
        for source in [s for hit in hits for s in [hit["source"]] + [a["source"] for a in hit.get("also", [])]]:
            doc = os.path.splitext(os.path.basename(source))[0]
            if doc not in seen:
                seen.add(doc)
                docs_in_order.append(doc)
        ranked.append(docs_in_order)
    return ranked


def quality(name):
    corpus, queries, qrels = retrieval.load_beir(retrieval.DATASETS[name])
    where = split(name, corpus)
    asked = sorted((q for q in qrels if len({where[d] for d in qrels[q] if d in where}) == 1),
                   key=lambda q: where[next(iter(qrels[q]))])
    folder = {q: where[next(iter(qrels[q]))] for q in asked}
    text = {q: queries[q].replace("\n", " ").strip() for q in asked}
    top = os.path.join(ROOT, name)
    within = dict(zip(asked, rankings(top, [line for q in asked for line in (f'/only "/{folder[q]}"', text[q])], 100)))
    fresh = {}
    for part in sorted(set(folder.values())):
        mine = [q for q in asked if folder[q] == part]
        fresh.update(zip(mine, rankings(os.path.join(top, part), [text[q] for q in mine], 100)))
    whole = dict(zip(asked, rankings(top, [text[q] for q in asked], 10)))
    after = {q: [d for d in whole[q] if where.get(d) == folder[q]] for q in asked}
    judged = {q: qrels[q] for q in asked}
    print(f"{name}: {len(set(folder.values()))} folders, {len(asked)} of {len(qrels)} questions with their answer in one folder")
    for label, ranking in (("within (--only)", within), ("fresh index", fresh), ("filter after top 10", after)):
        m = retrieval.metrics(ranking, judged)
        print(f"  {label:20} nDCG@10 {m['ndcg@10']:.4f}  MRR@10 {m['mrr@10']:.4f}  R@100 {m['recall@100']:.4f}  "
              f"hits in the top 10 {sum(len(ranking[q][:10]) for q in asked) / len(asked):.2f}")
    print(f"  the same top 10 within as fresh: {sum(within[q][:10] == fresh[q][:10] for q in asked)} of {len(asked)}")


def speed():
    sys.path.insert(0, PROJECT)
    sys.path.insert(0, BENCH)
    import rag
    import scale
    rag.index_format = lambda: "bench"  # one index for every version of rag.py measured (the same chunks)
    started = time.perf_counter()
    index = rag.build_index(rag.Config(docs=(scale.build(16),), cache=ROOT))
    print(f"index ready in {time.perf_counter() - started:.1f} s: {index.size:,} chunks")
    questions = []
    for name in ("scifact-train", "jaquad-dev"):
        with open(os.path.join(retrieval.DATASETS[name], "queries.jsonl"), encoding="utf-8") as f:
            questions += [json.loads(line)["text"] for line in f][:200]
    started = time.perf_counter()
    rag.chunks_within(index, ("since:1970",))  # the first filter reads each file's chunks from the index, once
    print(f"  the files' chunks read, for the first filter: {(time.perf_counter() - started) * 1000:.0f} ms")
    for only in [(), ("copy007/jaquad-dev",), ("copy007/scifact-train/1*",), ("copy007",), ("jaquad-dev",),
                 ("*-000-0*.txt",), ("!copy007",), ("since:2000",)]:
        index.filters.clear()
        started = time.perf_counter()
        within = rag.chunks_within(index, only)
        made = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        for question in questions:
            rag.rank(index, question, 10, "lexical", only=only)
        each = (time.perf_counter() - started) * 1000 / len(questions)
        share = within.size / index.size if within else 1.0
        print(f"  {' '.join(only) or '(no terms)':26} {share:7.2%} of the chunks, {len(within.runs) if within else 1:3} runs: "
              f"filter made in {made:4.0f} ms, then {each:5.1f} ms a question")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", nargs="*", default=["jaquad-dev", "arguana-dev", "scifact-train"])
    parser.add_argument("--speed", action="store_true")
    args = parser.parse_args()
    if args.speed:
        return speed()
    for name in args.data:
        quality(name)


if __name__ == "__main__":
    main()
