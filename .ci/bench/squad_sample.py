#!/usr/bin/env python3
"""SQuAD 1.1 dev as a small BEIR-style English set: every paragraph, 300 questions with their answers.

Source: the official dev-v1.1.json (48 articles, 2,067 paragraphs, 10,570 questions) is over the 4 MiB
the search store keeps, so it is read as the two halves that github.com/bloomsburyai/question-generation
committed in 88cc78cb56123efdf20abb0f4640a0405f1291e3 ("Add our dev and test split"): data/dev-v1.1.json
(24 articles, 4,961 questions) and data/test-v1.1.json (24 articles, 5,609 questions), the official
articles unchanged, split by article. The halves shuffle the article order, so it is put back as ORDER, the
order of dev-v1.1.json as github.com/rajpurkar/SQuAD-explorer lists it (explore/1.1/dev/index.html).

Output (default /work/benchdata/squad-sample): corpus.jsonl, one line per paragraph, _id "AAA-PPP" (article
and paragraph index in file order), title with "_" as " "; queries.jsonl; qrels.tsv (question -> its
paragraph, 1); answers.jsonl (distinct answer texts). Choice of questions: round-robin over the 48 articles
in file order; in round r (0, 1, ...) each article gives its question number r * (n // 7) in file order
(n = its question count), so an article's 6-7 questions spread over its paragraphs; stop at --count (300).

  python3 .ci/bench/squad_sample.py [--git DIR]   # a git dir holding that commit (default: the mirror
                                                  # that the search tool's fetch of the repo makes)
  python3 .ci/bench/squad_sample.py --files dev-v1.1.json test-v1.1.json --out DIR --count 300
"""
import argparse
import json
import os
import subprocess

COMMIT = "88cc78cb56123efdf20abb0f4640a0405f1291e3"
ORDER = """Super_Bowl_50 Warsaw Normans Nikola_Tesla Computational_complexity_theory Teacher Martin_Luther
Southern_California Sky_(United_Kingdom) Victoria_(Australia) Huguenot Steam_engine Oxygen 1973_oil_crisis
Apollo_program European_Union_law Amazon_rainforest Ctenophora Fresno,_California Packet_switching Black_Death
Geology Newcastle_upon_Tyne Victoria_and_Albert_Museum American_Broadcasting_Company Genghis_Khan Pharmacy
Immune_system Civil_disobedience Construction Private_school Harvard_University Jacksonville,_Florida
Economic_inequality Doctor_Who University_of_Chicago Yuan_dynasty Kenya Intergovernmental_Panel_on_Climate_Change
Chloroplast Prime_number Rhine Scottish_Parliament Islamism Imperialism United_Methodist_Church
French_and_Indian_War Force""".split()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--git", default="/work/.mirror/bloomsburyai+question-generation/repo/.git")
    p.add_argument("--files", nargs="*", help="the two halves as JSON files, instead of --git")
    p.add_argument("--out", default="/work/benchdata/squad-sample")
    p.add_argument("--count", type=int, default=300)
    a = p.parse_args()
    if a.files:
        texts = [open(f, encoding="utf-8").read() for f in a.files]
    else:
        texts = [subprocess.run(["git", "--git-dir", a.git, "show", f"{COMMIT}:data/{n}-v1.1.json"],
                                capture_output=True, check=True).stdout.decode("utf-8") for n in ("dev", "test")]
    articles = {art["title"]: art for t in texts for art in json.loads(t)["data"]}
    assert sorted(articles) == sorted(ORDER), "not the 48 articles of SQuAD 1.1 dev"
    os.makedirs(a.out, exist_ok=True)
    per_article = []  # [(question, paragraph id)] for each article, in file order
    with open(os.path.join(a.out, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for i, title in enumerate(ORDER):
            per_article.append([])
            for j, para in enumerate(articles[title]["paragraphs"]):
                pid = f"{i:03d}-{j:03d}"
                f.write(json.dumps({"_id": pid, "title": title.replace("_", " "), "text": para["context"]},
                                   ensure_ascii=False) + "\n")
                per_article[-1] += [(qa, pid) for qa in para["qas"]]
    chosen, r = [], 0
    while len(chosen) < a.count and r < 7 * 8:
        for qs in per_article:
            k = r * max(1, len(qs) // 7)
            if k < len(qs) and len(chosen) < a.count:
                chosen.append(qs[k])
        r += 1
    with open(os.path.join(a.out, "queries.jsonl"), "w", encoding="utf-8") as fq, \
            open(os.path.join(a.out, "answers.jsonl"), "w", encoding="utf-8") as fa, \
            open(os.path.join(a.out, "qrels.tsv"), "w", encoding="utf-8") as fr:
        fr.write("query-id\tcorpus-id\tscore\n")
        for qa, pid in chosen:
            fq.write(json.dumps({"_id": qa["id"], "text": qa["question"]}, ensure_ascii=False) + "\n")
            answers = list(dict.fromkeys(x["text"] for x in qa["answers"]))
            fa.write(json.dumps({"_id": qa["id"], "answers": answers}, ensure_ascii=False) + "\n")
            fr.write(f"{qa['id']}\t{pid}\t1\n")
    print(f"{a.out}: {sum(len(qs) for qs in per_article)} questions, "
          f"{sum(len(articles[t]['paragraphs']) for t in ORDER)} paragraphs; {len(chosen)} chosen from "
          f"{len({pid[:3] for _, pid in chosen})} articles, {len({pid for _, pid in chosen})} paragraphs")


if __name__ == "__main__":
    main()
