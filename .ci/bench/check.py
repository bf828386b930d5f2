#!/usr/bin/env python3
"""Answers you can check (issue 35): how well `rag.py --check` tells a hallucinated text from a supported one.

A set is a folder with labels.jsonl, one line a text: {"id", "folder", "text", "hallucinated": bool, ...},
where folder (relative to the set) holds the documents the text is to be checked against. For each line:

    python3 RAG --docs SET/FOLDER --check - --json      (the text on stdin)

and the verdict is check.supported of the JSON line it prints: a text not supported is marked hallucinated.
The runs of one set share a temporary XDG_CACHE_HOME (rag.py keeps its index there), removed at the end, so
nothing is written to the user's cache; the two texts of one folder run one after the other, so the second
finds the index that the first made. The sets of /tmp/checkdata (HaluEval QA and summaries, correct answers
with one fact changed) are made by .ci/bench/check_data.py.

    python3 .ci/bench/check.py --data /tmp/checkdata/halueval-qa [--data /tmp/checkdata/halueval-sum ...]
    python3 .ci/bench/check.py --data DIR --rag OTHER/rag.py --jobs 8 --limit 100
    python3 .ci/bench/check.py --data DIR --show-wrong 5      # and why: each sentence's verdict and missing
    python3 .ci/bench/check.py --data DIR --args "--mode lexical" --save runs.jsonl
    python3 .ci/bench/check.py --time 200     # the milliseconds the check adds to a ten-sentence answer

Reports one line a set: the texts run; the balanced accuracy of the verdict (the mean of the two rates
below); false marks, the correct texts marked as not supported (goal on HaluEval's right answers: at most
1 in 10); caught, the hallucinated texts marked; failed runs (exit code other than 0, 1 or 3, no JSON line
with check.supported, or over --timeout), left out of the rates and shown with their first lines of
stderr; the median and 90th percentile seconds of a run (wall time, --jobs running at once: --jobs 1 for
the time of a run alone). Nothing here is run by CI.
"""
import argparse
import concurrent.futures
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OK_CODES = (0, 1, 3)  # rag.py --check: 0 every sentence found, 3 not; any other code is a failed run


def read_labels(folder, limit=None):
    """Return the label lines of a set, the first `limit` of them if given."""
    with open(os.path.join(folder, "labels.jsonl"), encoding="utf-8") as f:
        labels = [json.loads(line) for line in f if line.strip()]
    return labels[:limit] if limit else labels


def check_of(stdout):
    """Return the "check" object of the last JSON line of stdout that has check.supported, else None."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            check = json.loads(line).get("check")
        except (ValueError, AttributeError):
            continue
        if isinstance(check, dict) and isinstance(check.get("supported"), bool):
            return check
    return None


def run_one(command, label, env, timeout):
    """Run rag.py on one text; return what the report needs of the run."""
    result = {"id": label["id"], "hallucinated": label["hallucinated"], "supported": None, "check": None,
              "failed": None, "stderr": "", "seconds": None}
    start = time.perf_counter()
    try:
        done = subprocess.run(command, input=label["text"], capture_output=True, text=True, encoding="utf-8",
                              errors="replace", env=env, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        result["failed"] = f"over {timeout:g} s"
        result["stderr"] = (e.stderr or b"").decode("utf-8", "replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return result
    result["seconds"] = time.perf_counter() - start
    result["stderr"] = done.stderr
    check = check_of(done.stdout)
    if done.returncode not in OK_CODES:
        result["failed"] = f"exit code {done.returncode}"
    elif check is None:
        result["failed"] = "no JSON line with check.supported"
    else:
        result["check"], result["supported"] = check, check["supported"]
    return result


def run_set(folder, args):
    """Run every text of a set, --jobs at once; return the results in the order of labels.jsonl."""
    labels = read_labels(folder, args.limit)
    by_folder = {}  # one folder's texts run in turn, so that only one run makes its index
    for n, label in enumerate(labels):
        by_folder.setdefault(label["folder"], []).append(n)
    cache = tempfile.mkdtemp(prefix="rag-check-cache-")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    results = [None] * len(labels)

    def run_folder(numbers):
        for n in numbers:
            label = labels[n]
            command = [sys.executable, args.rag, "--docs", os.path.join(folder, label["folder"]),
                       "--check", "-", "--json", *shlex.split(args.args)]
            results[n] = run_one(command, label, env, args.timeout)
            results[n]["label"] = label

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(run_folder, numbers) for numbers in by_folder.values()]
            for count, future in enumerate(concurrent.futures.as_completed(futures), 1):
                future.result()
                if sys.stderr.isatty():
                    print(f"\r{os.path.basename(folder)}: {count}/{len(futures)} folders", end="", file=sys.stderr)
        if sys.stderr.isatty():
            print("\r" + " " * 60 + "\r", end="", file=sys.stderr)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return results


def percentile(values, share):
    """The nearest-rank percentile of values (share 0.5: the median), or nan."""
    values = sorted(values)
    return values[max(0, math.ceil(share * len(values)) - 1)] if values else float("nan")


def summary(results):
    """Return the figures of one set's results."""
    done = [r for r in results if not r["failed"]]
    correct = [r for r in done if not r["hallucinated"]]
    halluc = [r for r in done if r["hallucinated"]]
    marked = sum(not r["supported"] for r in correct)
    caught = sum(not r["supported"] for r in halluc)
    false_rate = marked / len(correct) if correct else float("nan")
    caught_rate = caught / len(halluc) if halluc else float("nan")
    seconds = [r["seconds"] for r in results if r["seconds"] is not None]
    return {"texts": len(results), "balanced": (caught_rate + 1 - false_rate) / 2,
            "marked": marked, "correct": len(correct), "false_rate": false_rate,
            "caught": caught, "halluc": len(halluc), "caught_rate": caught_rate,
            "failed": len(results) - len(done), "median": percentile(seconds, 0.5), "p90": percentile(seconds, 0.9)}


def table(rows):
    """Print the report: one line a set."""
    print(f"{'set':<16} {'texts':>5} {'bal.acc':>7}  {'false marks':<17} {'caught':<17} {'failed':>6} "
          f"{'median s':>8} {'p90 s':>6}")
    for name, s in rows:
        print(f"{name:<16} {s['texts']:>5} {s['balanced']:>7.3f}  "
              f"{s['marked']:>5}/{s['correct']:<4} {s['false_rate']:>6.1%}  "
              f"{s['caught']:>5}/{s['halluc']:<4} {s['caught_rate']:>6.1%} {s['failed']:>6} "
              f"{s['median']:>8.2f} {s['p90']:>6.2f}")


def cut(text, width):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def show_failed(name, results, count=3):
    """Print the first failed runs of a set with the first lines of their stderr."""
    failed = [r for r in results if r["failed"]]
    if not failed:
        return
    print(f"\n{name}: {len(failed)} failed runs; the first {min(count, len(failed))}:")
    for r in failed[:count]:
        print(f"  {r['id']}: {r['failed']}")
        for line in r["stderr"].strip().splitlines()[:4]:
            print(f"    | {cut(line, 150)}")


def show_wrong(name, results, count):
    """Print up to count misjudged texts of a set, false marks and misses in turn, and why."""
    marked = [r for r in results if not r["failed"] and not r["hallucinated"] and not r["supported"]]
    missed = [r for r in results if not r["failed"] and r["hallucinated"] and r["supported"]]
    wrong = [r for pair in zip(marked, missed) for r in pair]
    wrong += marked[len(missed):] + missed[len(marked):]
    if not wrong:
        return
    print(f"\n{name}: {len(marked)} correct texts marked, {len(missed)} hallucinated ones missed; {min(count, len(wrong))}:")
    for r in wrong[:count]:
        label = r["label"]
        what = "correct, marked as not supported" if not r["hallucinated"] else "hallucinated, found supported"
        print(f"- {r['id']} ({what})")
        if label.get("question"):
            print(f"    question: {cut(label['question'], 150)}")
        print(f"    text: {cut(label['text'], 300)}")
        if label.get("changed"):
            print(f"    changed: {label['changed'].get('from')!r} -> {label['changed'].get('to')!r}")
        for s in r["check"].get("sentences") or []:
            verdict = "found    " if s.get("supported") else "NOT FOUND"
            print(f"    {verdict} {cut(s.get('text', ''), 110)}")
            if s.get("missing"):
                print(f"              missing: {', '.join(json.dumps(m, ensure_ascii=False) for m in s['missing'])}")
            if s.get("quote"):
                print(f"              quote: {cut(s['quote'], 110)}")


TEN_SENTENCES = ("Expense reports must be filed within 30 days of the expense [1]. For a business trip the 30 days "
                 "start on the last day of the trip [1]. A late report needs the approval of your department head [1]. "
                 "Finance processes late reports only once a month [1]. Expenses older than 90 days are not reimbursed "
                 "[1]. The CFO can grant an exception for a long illness [1]. Reports are filed in PeopleHub [2]. "
                 "Receipts must be attached as photos or scans [2]. The last day to file them is 31 December, 2024 [3]. "
                 "Reports above EUR 5,000 go to the CFO [4].")


def time_check(rag_path, repeats):
    """Print the milliseconds that the check adds to an answer of ten sentences over the handbook's five best
    passages for its question, in this process (the median of repeats)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(rag_path)))
    import rag  # noqa: E402  (the rag.py given)
    index = rag.Index()
    with rag.transaction(index.db, index.path):  # the handbook, indexed in memory
        for part in rag.make_parts([rag.File(rag.DEFAULT_DOCS, "handbook.txt", rag.READERS[".txt"], "0 0 0")]):
            rag.add_part(index, part)
        for extra in rag.INDEX_EXTRAS.values():
            extra["updated"](index)
    index.read_lengths()
    config = rag.Config(mode="lexical", k=5)
    question = "When do I have to file my expense report?"
    hits = rag.retrieve(index, question, config).found[:5]
    answer = rag.Answer(question, "lexical", hits, hits=hits, text=TEN_SENTENCES)
    spent = []
    for _ in range(repeats):
        started = time.perf_counter()
        checked = rag.check_answer(index, answer)
        spent.append(time.perf_counter() - started)
    print(f"the check of {len(checked.check)} sentences over {len(hits)} passages "
          f"({sum(len(hit.chunk.text) for hit in hits):,} characters): median {1000 * percentile(spent, 0.5):.1f} ms, "
          f"90th percentile {1000 * percentile(spent, 0.9):.1f} ms, first {1000 * spent[0]:.1f} ms; "
          f"{sum(e.supported for e in checked.check)} found")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", action="append", metavar="SET",
                        help="a folder with labels.jsonl (repeatable)")
    parser.add_argument("--time", type=int, metavar="N", help="instead: time the check in-process, N times (see time_check)")
    parser.add_argument("--rag", default=os.path.join(ROOT, "rag.py"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="runs at once (default: %(default)s)")
    parser.add_argument("--limit", type=int, help="only the first N texts of each set")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a run may take (default: %(default)s)")
    parser.add_argument("--args", default="", help='more arguments for rag.py, e.g. "--mode lexical"')
    parser.add_argument("--show-wrong", type=int, default=0, metavar="N", help="print N misjudged texts a set")
    parser.add_argument("--save", metavar="FILE", help="write every run as a JSON line (id, set, label, verdict, "
                                                       "seconds, check), to compare versions")
    args = parser.parse_args()
    if args.time:
        return time_check(args.rag, args.time)
    if not args.data:
        parser.error("give --data SET (or --time N)")
    rows, runs = [], {}
    for folder in args.data:
        name = os.path.basename(os.path.normpath(folder))
        start = time.perf_counter()
        runs[name] = run_set(folder, args)
        rows.append((name, summary(runs[name])))
        print(f"{name}: {len(runs[name])} runs in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(f"rag: {args.rag}  jobs: {args.jobs}" + (f"  args: {args.args}" if args.args else ""))
    table(rows)
    for name, results in runs.items():
        show_failed(name, results)
        if args.show_wrong:
            show_wrong(name, results, args.show_wrong)
    if args.save:
        with open(args.save, "w", encoding="utf-8") as f:
            for name, results in runs.items():
                for r in results:
                    f.write(json.dumps({"set": name, "id": r["id"], "hallucinated": r["hallucinated"],
                                        "supported": r["supported"], "failed": r["failed"], "seconds": r["seconds"],
                                        "check": r["check"]}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
