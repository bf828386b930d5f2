#!/usr/bin/env python3
"""Answers kept (issue 36): a question asked again costs no model request, and how long it takes.

    python3 .ci/bench/answers.py [--rag OTHER/rag.py] [--questions 20]

Starts the Ollama stand-in of ../shared (hash embeddings, its request log), then in one process asks the
handbook's questions twice through rag.ask() (the page and the JSON API go the same way), with the index and
the answers in a temporary cache folder (removed at the end). Reports the chat requests the stand-in saw
for each round, and the median and slowest time of an answer in each: the second round must ask nothing.
Nothing here is run by CI.
"""
import argparse
import contextlib
import importlib.util
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STAND_IN = os.path.join(ROOT, "..", "shared", "ollama-stand-in", "fake_ollama.py")
QUESTIONS = ["When do I have to file my expense report?", "How many days of annual leave do I get?",
             "What is the per diem in Japan?", "What is the mileage rate for using my own car?",
             "Who approves travel to a high-risk destination?", "How do I report a phishing email?",
             "How much is the home office stipend?", "When are salaries paid?", "Can I fly business class?",
             "What is the travel insurance policy number?"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rag", default=os.path.join(ROOT, "rag.py"))
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("rag", args.rag)
    rag = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rag)
    stand_in = subprocess.Popen([sys.executable, STAND_IN, "--port", "0", "--hash-embeddings"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
    cache = tempfile.mkdtemp(prefix="rag-answers-")
    try:
        base = "http://127.0.0.1:" + stand_in.stdout.readline().strip().split("=", 1)[1]
        config = rag.Config(server=base, mode="lexical", cache=cache)
        with contextlib.redirect_stderr(io.StringIO()):
            config = rag.connect(config)
            index = rag.build_index(config, None)
        questions = (QUESTIONS * 10)[:args.questions]
        for round in ("first", "again"):
            urllib.request.urlopen(urllib.request.Request(base + "/_harness/reset", b"", method="POST")).read()
            times = []
            for question in questions:
                started = time.perf_counter()
                answer = rag.ask(index, question, config)
                times.append(time.perf_counter() - started)
                assert answer.text and not answer.failure, answer.failure
            log = json.loads(urllib.request.urlopen(base + "/_harness/requests").read())
            chats = sum("chat" in entry.get("path", "") for entry in log)
            print(f"{round:6} {len(questions)} questions: {chats} chat requests to the model; an answer took "
                  f"median {statistics.median(times) * 1000:.1f} ms, at most {max(times) * 1000:.1f} ms")
    finally:
        stand_in.terminate()
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
