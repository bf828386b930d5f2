#!/usr/bin/env python3
"""Rerank (issue 36): what the blend of --rerank keeps of a perfect reranker's gain, and what a random one
costs, through ../shared/bench/retrieval.py.

    python3 .ci/bench/rerank.py --data scifact-train [--limit 200]
    python3 .ci/bench/rerank.py --data arguana-dev --rerankers perfect,random
    python3 .ci/bench/rerank.py --serve perfect --data scifact-train     # only the server, until Ctrl-C

Starts a stand-in of an OpenAI-compatible server (/v1/models, /v1/rerank) that knows the data's qrels: a
"perfect" reranker scores each passage by the grade of its document for the question (the question is
found by its text, the document by its passage's text), a "random" one at random (the same for the same
question and passage). Then runs retrieval.py with `--rerank --host` on it, against rag.py without
--rerank, for each reranker, and also with a copy of rag.py whose blend is left out (the
reranker's order alone: RERANK_WEIGHT huge, RERANK_MARGIN none). Reports nDCG@10, and the share of the reranker's own gain that the blend keeps.
Nothing here is run by CI.
"""
import argparse
import http.server
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RETRIEVAL = os.path.join(ROOT, "..", "shared", "bench", "retrieval.py")
DATA = os.path.join(ROOT, "..", "shared", "bench", "data")
SHINGLE = 48  # characters of normalized text that find a passage's document


def normalized(text):
    return " ".join(re.findall(r"\w+", text.lower()))


def load(folder):
    """Return (the documents' shingles {text: id}, the questions {text: id}, the qrels {qid: {docid: grade}})."""
    shingles, questions, qrels = {}, {}, {}
    with open(os.path.join(folder, "corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            text = normalized((doc.get("title") or "") + " " + doc["text"])
            for start in [0] + [m.end() for m in re.finditer(" ", text)]:
                shingle = text[start:start + SHINGLE]
                shingles[shingle] = doc["_id"] if shingles.get(shingle, doc["_id"]) == doc["_id"] else None  # None: shared
    with open(os.path.join(folder, "queries.jsonl"), encoding="utf-8") as f:
        for line in f:
            query = json.loads(line)
            questions[" ".join(query["text"].split())] = query["_id"]
    with open(os.path.join(folder, "qrels.tsv"), encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, docid, grade = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[docid] = int(grade)
    return shingles, questions, qrels


def document_of(text, shingles):
    """Return the id of the document a passage comes from: the one that holds most of its shingles (those
    of one document alone: a debate's arguments share their title)."""
    words = normalized(text)
    votes = {}
    for start in [0] + [m.end() for m in re.finditer(" ", words)][:200]:
        found = shingles.get(words[start:start + SHINGLE])
        if found:
            votes[found] = votes.get(found, 0) + 1
    return max(votes, key=votes.get) if votes else None


def serve(kind, folder):
    """Start the stand-in server in a thread; return its address."""
    shingles, questions, qrels = load(folder)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply({"object": "list", "data": [{"id": "reranker", "object": "model", "meta": {"n_ctx": 8192}}]})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            qid = questions.get(" ".join(body["query"].split()))
            scores = []
            for text in body["documents"]:
                if kind == "perfect":
                    scores.append(qrels.get(qid, {}).get(document_of(text, shingles), 0))
                else:
                    scores.append(random.Random(body["query"] + text[:200]).random())
            self.reply({"results": sorted(({"index": i, "relevance_score": s} for i, s in enumerate(scores)),
                                          key=lambda r: -r["relevance_score"])})

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def ndcg(args, rag, rag_args):
    """Return nDCG@10 of one retrieval.py run."""
    command = [sys.executable, RETRIEVAL, "--rag", rag, "--data", args.data, "-k", "10", "--rag-args", rag_args]
    if args.limit:
        command += ["--limit", str(args.limit)]
    out = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    match = re.search(r"^rag\.py\s+([\d.]+)", out, re.M)  # the table's row: nDCG@10 first
    if not match:
        sys.exit(f"retrieval.py printed no nDCG@10:\n{out[-2000:]}")
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="scifact-train")
    parser.add_argument("--rag", default=os.path.join(ROOT, "rag.py"))
    parser.add_argument("--limit", type=int, default=0, help="the first N questions only")
    parser.add_argument("--rerankers", default="perfect,random")
    parser.add_argument("--serve", choices=("perfect", "random"), help="only start the server, and wait")
    args = parser.parse_args()
    folder = args.data if os.path.isdir(args.data) else os.path.join(DATA, args.data)
    if args.serve:
        print(serve(args.serve, folder), flush=True)
        threading.Event().wait()
    with open(args.rag, encoding="utf-8") as f:  # the same rag.py with the blend left out: the reranker's order alone
        alone = re.sub(r"(?m)^RERANK_MARGIN = .*$", "RERANK_MARGIN = -1e3",
                       re.sub(r"(?m)^RERANK_WEIGHT = .*$", "RERANK_WEIGHT = 1e6", f.read()))
    with tempfile.TemporaryDirectory() as temp:
        alone_rag = os.path.join(temp, "rag.py")
        with open(alone_rag, "w", encoding="utf-8") as f:
            f.write(alone)
        base = ndcg(args, args.rag, "--mode lexical")
        print(f"{args.data}{f' (first {args.limit} questions)' if args.limit else ''}: nDCG@10 without --rerank {base:.4f}", flush=True)
        for kind in args.rerankers.split(","):
            host = serve(kind, folder)
            alone_score = ndcg(args, alone_rag, f"--mode lexical --rerank --host {host}")
            blended = ndcg(args, args.rag, f"--mode lexical --rerank --host {host}")
            share = f", {(blended - base) / (alone_score - base):.0%} of its gain alone" if alone_score > base else ""
            print(f"  {kind:7} reranker: its order alone {alone_score:.4f} ({alone_score - base:+.4f}), "
                  f"blended {blended:.4f} ({blended - base:+.4f}{share})", flush=True)


if __name__ == "__main__":
    main()
