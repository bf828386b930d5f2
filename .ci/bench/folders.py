#!/usr/bin/env python3
"""Folder benchmark of real formats: what rag.py costs on a mixed team drive, beside the floors.

scale.py (../shared/bench) measures folders of plain text; this one measures folders like a real
team drive: PDFs (the shared 16 of ../shared/bench/data/pdf under new names, plus multi-page PDFs
made by LibreOffice from real English and Japanese text), DOCX, ODT, PPTX, ODP, XLSX, ODS and EPUB
made by LibreOffice, Markdown and HTML, in folders of teams and years, with about 5% of the files
exact copies under other names ("policy (1).pdf", "Copy of ...", the same name in another folder).
The text is real: SciFact and ArguAna (English), JaQuAD (Japanese), from ../shared/bench/data.

For each size (about 20 MB, 200 MB and 1 GB by default) it reports:
  the folder      files, MB (10^6 bytes), PDF pages (pdfinfo) and "pages": PDF pages + PPTX/ODP
                  slides + XLSX/ODS sheets + EPUB chapters (spine items) + 1 for every other file
  first run       rag.py --search with a fresh --cache: wall seconds, files/s, pages/s, MB/s, the peak
                  memory of the main process (its VmHWM) and the peak sum of RSS over its whole
                  process tree (workers included; /proc sampled every 50 ms)
  second run      the same command again (best of two) and its peak memory
  one .md changed a paragraph appended to one Markdown file, then the same command
  one .docx rewritten  another .docx copied over one .docx, then the same command
  a question      ms a question: N piped questions minus the one-question second run (as scale.py)
  floors          measured in the same run on the same PDFs (copies included):
                    pdftotext -q -enc UTF-8 FILE - > /dev/null, one file after the other
                    the same through xargs -P $(nproc)
                    pypdf: PdfReader(f).pages[i].extract_text() for every page of every PDF, one
                    process (a PDF it cannot open or decrypt is counted as failed)
                  and the ratio of rag.py's first run to pdftotext's one-at-a-time seconds.
A failed rag.py run (non-zero exit) is reported with its exit code and the last line of its stderr,
and the benchmark goes on.

--big-pdf: one PDF of about 2,000 pages of real text (and 200 and 1,000-page versions of it), each read
alone by `rag.py --docs THAT.pdf --search -k 1 x` with a fresh --cache: the peak memory shows whether it
grows with the pages. pdftotext's and pypdf's seconds on it are given beside.

Usage (from the repository; nothing here is run by CI):
  python3 .ci/bench/folders.py                         # 20, 200 and 1000 MB
  python3 .ci/bench/folders.py --sizes 20 200 --json
  python3 .ci/bench/folders.py --sizes 20 --rag-args "--mode bm25"
  python3 .ci/bench/folders.py --sizes --big-pdf       # the big-PDF check alone
  python3 .ci/bench/folders.py --build-only --sizes 20 200 1000 --big-pdf
Options: --rag PATH (default: rag.py two levels up from this script), --python (the interpreter that
runs rag.py), --rag-args, --no-floor, --no-pypdf, --no-rag (floors only), --questions N, --jobs N (LibreOffice processes while
building), --root DIR.

Needs: LibreOffice and fonts, poppler-utils; pypdf in a venv for its floor:
  apt-get install -y libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui \\
      fonts-noto-cjk poppler-utils
  python3 -m venv /tmp/ragbench && /tmp/ragbench/bin/pip install pypdf   (or --pypdf-python PATH)

Data: built once, deterministically (every document's text, name and folder come from a seeded
generator keyed by its kind and number; LibreOffice writes its own timestamps into the files), and
cached under /tmp/ragbench-folders/: pool/ holds the converted documents (a bigger size reuses a
smaller one's and converts more; a build that is stopped resumes at the next batch), size-N/ is the
folder of about N MB and size-N.json its manifest (written last: its presence marks the folder
complete), bigpdf/ the big PDFs. Building took, on 2 cores: 34 s for 20 MB, 249 s more for 200 MB,
1,221 s more for 1 GB, 41 s for the big PDFs. The text is real but there is only so much of it (16 MB English,
1.5 MB Japanese): a document is a run of consecutive passages from a seeded start, so documents differ,
but at 200 MB each passage is used about 7 times and at 1 GB about 35 times. rag.py's index goes to a
fresh temporary --cache under the same root, deleted at the end. Files changed by a run are restored
at its end (or at the next start).
"""
import argparse
import fcntl
import html
import json
import math
import os
import queue
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "bench")
ROOT = os.path.join(tempfile.gettempdir(), "ragbench-folders")
SEED = 20240601
MB = 1e6
MIB = 2 ** 20
COPY_SHARE = 0.05            # share of the files that are exact copies of another file of the folder

# Share of the folder's bytes by kind (before copies); the shared 16 PDFs count in "pdf".
# src: what this script writes for LibreOffice; filt: its --convert-to; app: the LibreOffice module.
KINDS = {
    "pdf":  dict(share=0.55, src="html", filt="pdf:writer_pdf_Export", app=["--writer"], ja=0.10),
    "docx": dict(share=0.10, src="html", filt="docx:MS Word 2007 XML", app=["--writer"], ja=0.10),
    "odt":  dict(share=0.04, src="html", filt="odt", app=["--writer"], ja=0.10),
    "epub": dict(share=0.04, src="html", filt="epub", app=["--writer"], ja=0.10),
    "pptx": dict(share=0.06, src="fodp", filt="pptx", app=[], ja=0.10),
    "odp":  dict(share=0.01, src="fodp", filt="odp", app=[], ja=0.10),
    "xlsx": dict(share=0.05, src="fods", filt="xlsx", app=[], ja=0.10),
    "ods":  dict(share=0.01, src="fods", filt="ods", app=[], ja=0.10),
    "md":   dict(share=0.06, src=None, ja=0.10),
    "html": dict(share=0.08, src=None, ja=0.10),
}
GUESS_BYTES = {"pdf": 200e3, "docx": 20e3, "odt": 20e3, "epub": 40e3, "pptx": 35e3, "odp": 25e3,
               "xlsx": 30e3, "ods": 25e3, "md": 12e3, "html": 25e3}
BATCH = 24                   # documents per soffice call

# The shared 16, under the names and folders a team drive would give them.
SHARED_NAMES = {
    "damaged-xref.pdf": "operations/2022/vendors/vendor-terms-signed.pdf",
    "encrypted-aes-128bit.pdf": "legal/contracts/2023/NDA-protected.pdf",
    "encrypted-aes-256bit.pdf": "hr/policies/2024/handbook-protected.pdf",
    "encrypted-rc4-128bit.pdf": "finance/2021/reports/annual-report-locked.pdf",
    "encrypted-rc4-40bit.pdf": "legal/archive/2019/old-contract-locked.pdf",
    "ghostscript-redistilled.pdf": "research/papers/2022/findings-print-version.pdf",
    "handbook-chromium.pdf": "hr/policies/Employee Handbook (web).pdf",
    "handbook-writer-from-text.pdf": "hr/onboarding/handbook.pdf",
    "handbook-writer-headings.pdf": "hr/policies/2023/employee-handbook-v3.pdf",
    "japanese-writer.pdf": "tokyo-office/資料/社内資料.pdf",
    "long-writer.pdf": "research/reviews/2021/abstracts-collection.pdf",
    "mupdf-cleaned.pdf": "shared/archive/2020/handbook-cleaned.pdf",
    "object-streams-qpdf.pdf": "engineering/2023/specs/policy.pdf",
    "scanned-image-only.pdf": "finance/2020/invoices/scan-0001.pdf",
    "twocolumn-chromium.pdf": "research/papers/2023/two-column-preprint.pdf",
    "twocolumn-pdflatex.pdf": "research/papers/2024/article-final.pdf",
}
TEAMS = {
    "engineering": ["specs", "design", "postmortems", "runbooks", "meeting-notes"],
    "research": ["papers", "reviews", "data", "drafts"],
    "finance": ["reports", "budgets", "audits"],
    "hr": ["policies", "onboarding", "benefits", "training"],
    "legal": ["contracts", "compliance", "archive"],
    "sales": ["decks", "proposals", "accounts", "Customer Meetings"],
    "marketing": ["campaigns", "brand", "press"],
    "operations": ["procedures", "vendors", "facilities"],
    "shared": ["archive", "templates", "misc"],
}
JA_TEAM = ("tokyo-office", ["資料", "議事録", "報告書", "提案書", "規程"])
YEARS = [str(y) for y in range(2018, 2025)]
PROJECTS = ["atlas", "borealis", "cobalt", "delta-migration", "ember", "fjord", "granite", "helios"]


# ---------------------------------------------------------------------------------------------------
# Real text

class Texts:
    """Units of real text: (heading, [paragraphs]) from SciFact and ArguAna (en) and JaQuAD (ja)."""

    def __init__(self, data):
        self.data = data
        self.en = self._load("scifact-train", use_title=True) + self._load("arguana-dev", use_title=False)
        self.ja = self._load("jaquad-dev", use_title=True)
        random.Random(SEED).shuffle(self.en)
        random.Random(SEED + 1).shuffle(self.ja)
        self.chars = {lang: sum(len(h) + sum(len(p) for p in ps) for h, ps in units)
                      for lang, units in (("en", self.en), ("ja", self.ja))}

    def _load(self, name, use_title):
        out = []
        with open(os.path.join(self.data, name, "corpus.jsonl"), encoding="utf-8") as f:
            for line in f:
                o = json.loads(line)
                text = clean(o["text"])
                paras = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
                if not paras:
                    continue
                head = clean(o.get("title") or "") if use_title else ""
                if not head:
                    head = " ".join(paras[0].split()[:8]).rstrip(".,;:")
                out.append((head, paras))
        return out

    def units(self, lang):
        return self.en if lang == "en" else self.ja

    def take(self, lang, start, chars=0, count=0):
        """Consecutive units from start on, until about `chars` characters and at least `count` units."""
        units = self.units(lang)
        i, got, out = start, 0, []
        while (got < chars or len(out) < max(count, 1)) and len(out) < len(units):
            u = units[i % len(units)]
            out.append(u)
            got += len(u[0]) + sum(len(p) for p in u[1])
            i += 1
        return out, got

    def questions(self, n):
        qs = []
        for name, count in (("scifact-train", n - n // 4), ("jaquad-dev", n // 4)):
            with open(os.path.join(self.data, name, "queries.jsonl"), encoding="utf-8") as f:
                part = [json.loads(l)["text"].replace("\n", " ").strip() for l in f]
            qs.append([q for q in part if q][:count])
        en, ja = qs
        out = []
        for i in range(max(len(en), len(ja))):      # interleaved: three English, one Japanese
            out += en[i * 3:i * 3 + 3] if i * 3 < len(en) else []
            out += ja[i:i + 1]
        return out[:n]


def clean(s):
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]", " ", s)


def sentences(text):
    return [s for s in re.split(r"(?<=[.!?。！？])\s*", text) if s.strip()]


def log_uniform(rng, lo, hi):
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def esc(s):
    return html.escape(s, quote=True)


# ---------------------------------------------------------------------------------------------------
# One document: its text (as the source LibreOffice converts, or the file itself) from (kind, n) alone

def doc_rng(kind, n, what="text"):
    return random.Random(f"{SEED}:{what}:{kind}:{n}")


def doc_start(kind, n, texts):
    """Where document n of kind starts in its language's units: its first unit gives its title."""
    return doc_rng(kind, n, "start").randrange(len(texts.units(doc_lang(kind, n))))


def doc_lang(kind, n):
    return "ja" if doc_rng(kind, n, "lang").random() < KINDS[kind]["ja"] else "en"


def html_document(title, lang, body):
    return (f"<!DOCTYPE html>\n<html lang=\"{lang}\"><head><meta charset=\"utf-8\"><title>{esc(title)}</title>"
            f"</head><body>\n{body}</body></html>\n")


def paragraphs_html(rng, paras):
    out = []
    for p in paras:
        if rng.random() < 0.12 and len(sentences(p)) >= 3:
            out.append("<ul>" + "".join(f"<li>{esc(s)}</li>" for s in sentences(p)) + "</ul>")
        else:
            out.append(f"<p>{esc(p)}</p>")
    return "\n".join(out)


def table_html(rng, units):
    rows = "".join(f"<tr><td>{i + 1}</td><td>{esc(h[:80])}</td><td>{esc(sentences(ps[0])[0][:160])}</td>"
                   f"<td>{rng.randint(1, 999)}</td></tr>" for i, (h, ps) in enumerate(units[:rng.randint(3, 8)]))
    return ("<table border=\"1\"><tr><th>No.</th><th>Item</th><th>Summary</th><th>Value</th></tr>"
            + rows + "</table>\n")


def writer_source(kind, n, texts):
    """HTML for Writer: a title, sections with headings, paragraphs, some lists and a table."""
    rng, lang = doc_rng(kind, n), doc_lang(kind, n)
    per_page = 3300 if lang == "en" else 1100
    if kind == "pdf":
        pages = log_uniform(rng, 5, 60 if lang == "en" else 30)
    elif kind == "epub":
        pages = log_uniform(rng, 8, 80 if lang == "en" else 40)
    else:
        pages = log_uniform(rng, 1, 40 if lang == "en" else 20)
    units, chars = texts.take(lang, doc_start(kind, n, texts), pages * per_page)
    title = units[0][0]
    body = [f"<h1>{esc(title)}</h1>\n"]
    chapter = rng.randint(3, 10)
    for i, (head, paras) in enumerate(units):
        if kind == "epub" and i and i % chapter == 0:      # EPUB: a chapter at each h1
            body.append(f"<h1>{esc(head)}</h1>\n")
        body.append(f"<h2>{esc(head)}</h2>\n{paragraphs_html(rng, paras)}\n")
        if rng.random() < 0.03:
            body.append(table_html(rng, units[i:] + units[:i]))
    return html_document(title, lang, "".join(body)), chars


FODP_HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n<office:document '
             'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
             'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
             'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
             'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
             'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
             'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.2" '
             'office:mimetype="application/vnd.oasis.opendocument.%s">\n<office:body>')


def slides_source(kind, n, texts):
    """Flat ODF presentation: a title slide, then one slide per unit (heading + bullets)."""
    rng, lang = doc_rng(kind, n), doc_lang(kind, n)
    slides = int(log_uniform(rng, 5, 40))
    units, _ = texts.take(lang, doc_start(kind, n, texts), count=slides)
    chars = 0
    out = [FODP_HEAD % "presentation", "<office:presentation>\n"]
    for i, (head, paras) in enumerate(units):
        bullets = sentences(" ".join(paras))[:rng.randint(2, 6)]
        chars += len(head) + sum(map(len, bullets))
        items = "".join(f"<text:list-item><text:p>{esc(b)}</text:p></text:list-item>" for b in bullets)
        out.append(f'<draw:page draw:name="page{i + 1}">'
                   f'<draw:frame presentation:class="title" svg:x="1cm" svg:y="0.6cm" svg:width="26cm" '
                   f'svg:height="2.6cm"><draw:text-box><text:p>{esc(head[:120])}</text:p></draw:text-box></draw:frame>'
                   f'<draw:frame presentation:class="outline" svg:x="1cm" svg:y="3.6cm" svg:width="26cm" '
                   f'svg:height="13cm"><draw:text-box><text:list>{items}</text:list></draw:text-box></draw:frame>'
                   f'</draw:page>\n')
    out.append("</office:presentation></office:body></office:document>\n")
    return "".join(out), chars


def sheets_source(kind, n, texts):
    """Flat ODF spreadsheet: 1-4 sheets of rows with numbers, dates and text cells of real text."""
    rng, lang = doc_rng(kind, n), doc_lang(kind, n)
    names = ["Summary", "Findings", "Q1", "Q2", "Data", "Log", "Backlog", "Budget", "Contacts", "Raw"]
    if lang == "ja":
        names = ["概要", "一覧", "集計", "データ", "予定", "記録"]
    status = ["open", "done", "blocked", "review"] if lang == "en" else ["未着手", "完了", "保留", "確認中"]
    chars, out = 0, [FODP_HEAD % "spreadsheet", "<office:spreadsheet>\n"]
    start = doc_start(kind, n, texts)

    def cell(v):
        if isinstance(v, (int, float)):
            return f'<table:table-cell office:value-type="float" office:value="{v}"><text:p>{v}</text:p></table:table-cell>'
        return f'<table:table-cell office:value-type="string"><text:p>{esc(v)}</text:p></table:table-cell>'

    for s, name in enumerate(rng.sample(names, rng.randint(1, 4))):
        rows = int(log_uniform(rng, 15, 250))
        units, _ = texts.take(lang, start, count=rows)
        start += rows
        header = ["ID", "Title", "Summary", "Year", "Score", "Status", "Notes"]
        out.append(f'<table:table table:name="{esc(name)}"><table:table-row>'
                   + "".join(cell(h) for h in header) + "</table:table-row>\n")
        for r in range(rows):
            head, paras = units[r % len(units)]
            sents = sentences(" ".join(paras))
            summary = " ".join(sents[:rng.randint(1, 3)])
            notes = sents[-1] if rng.random() < 0.3 else ""
            chars += len(head) + len(summary) + len(notes)
            vals = [r + 1, head[:100], summary, rng.randint(2015, 2024), round(rng.uniform(0, 100), 2),
                    rng.choice(status), notes]
            out.append("<table:table-row>" + "".join(cell(v) for v in vals) + "</table:table-row>\n")
        out.append("</table:table>\n")
    out.append("</office:spreadsheet></office:body></office:document>\n")
    return "".join(out), chars


def markdown_file(n, texts):
    rng, lang = doc_rng("md", n), doc_lang("md", n)
    units, chars = texts.take(lang, doc_start("md", n, texts),
                              log_uniform(rng, 1500, 40000) / (1 if lang == "en" else 3))
    out = [f"# {units[0][0]}\n\n",
           f"_Last updated {rng.choice(YEARS)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}_\n\n"]
    for head, paras in units:
        out.append(f"## {head}\n\n")
        for p in paras:
            if rng.random() < 0.15 and len(sentences(p)) >= 3:
                out.append("".join(f"- {s}\n" for s in sentences(p)) + "\n")
            else:
                out.append(p + "\n\n")
        if rng.random() < 0.05:
            out.append("| Item | Owner | Status |\n| --- | --- | --- |\n" + "".join(
                f"| {h[:40]} | {rng.choice(['ana', 'bo', 'chen', 'dev'])} | {rng.choice(['open', 'done'])} |\n"
                for h, _ in units[:4]) + "\n")
    return "".join(out), chars


def html_file(n, texts):
    """An exported wiki page: navigation, styles, a script, the article, a footer."""
    rng, lang = doc_rng("html", n), doc_lang("html", n)
    units, chars = texts.take(lang, doc_start("html", n, texts),
                              log_uniform(rng, 2000, 60000) / (1 if lang == "en" else 3))
    title = units[0][0]
    nav = "".join(f'<li><a href="/wiki/{t}">{t.title()}</a></li>' for t in TEAMS)
    body = [f'<header><nav><ul>{nav}</ul></nav></header>\n<main><article>\n<h1>{esc(title)}</h1>\n']
    for head, paras in units:
        body.append(f"<section><h2>{esc(head)}</h2>\n{paragraphs_html(rng, paras)}</section>\n")
    body.append(f"</article></main>\n<footer><p>Page {n} · Internal wiki · Do not distribute</p></footer>\n"
                "<script>document.querySelectorAll('h2').forEach(function (h) { h.id = h.textContent"
                ".toLowerCase().replace(/\\W+/g, '-'); });</script>\n")
    style = ("<style>body{font-family:sans-serif;max-width:60em;margin:auto}nav ul{display:flex;gap:1em;"
             "list-style:none}footer{color:#666;font-size:small}</style>")
    doc = html_document(title, lang, "".join(body)).replace("</title>", "</title>" + style, 1)
    return doc, chars


def source_of(kind, n, texts):
    """(content, chars of real text) of document n of kind: LibreOffice's source, or the file itself."""
    if kind in ("md", "html"):
        return (markdown_file if kind == "md" else html_file)(n, texts)
    src = KINDS[kind]["src"]
    return {"html": writer_source, "fodp": slides_source, "fods": sheets_source}[src](kind, n, texts)


# ---------------------------------------------------------------------------------------------------
# The pool of converted documents: pool/<kind>/<n>.<kind>, built in batches, resumable

def soffice():
    return shutil.which("soffice") or shutil.which("libreoffice") or sys.exit(
        "LibreOffice is needed: apt-get install -y libreoffice-writer-nogui libreoffice-calc-nogui "
        "libreoffice-impress-nogui fonts-noto-cjk")


class Pool:
    def __init__(self, root, texts, jobs, log):
        self.root, self.texts, self.jobs, self.log = os.path.join(root, "pool"), texts, jobs, log
        self.profiles = queue.Queue()
        for i in range(jobs):
            self.profiles.put(os.path.join(root, f"lo-profile-{i}"))
        self.chars = {}

    def path(self, kind, n):
        return os.path.join(self.root, kind, f"{n:05d}.{kind}")

    def done(self, kind):
        """Documents 0.. that are converted (or failed to), in order: [(n, path or None, bytes)]."""
        out, n = [], 0
        while True:
            p = self.path(kind, n)
            if os.path.exists(p):
                out.append((n, p, os.path.getsize(p)))
            elif os.path.exists(p + ".failed"):
                out.append((n, None, 0))
            else:
                return out
            n += 1

    def ensure(self, kind, target_bytes):
        """Convert documents of kind until the first ones add up to target_bytes; return those."""
        while True:
            have = self.done(kind)
            total = sum(b for _, _, b in have)
            if total >= target_bytes:
                out, acc = [], 0
                for n, p, b in have:
                    if acc >= target_bytes:
                        break
                    if p:
                        out.append((n, p, b))
                        acc += b
                return out
            ok = [b for _, p, b in have if p]
            avg = sum(ok) / len(ok) if len(ok) >= 5 else GUESS_BYTES[kind]
            need = int((target_bytes - total) / avg * 1.05) + 1
            self.make(kind, range(len(have), len(have) + need))

    def make(self, kind, numbers):
        os.makedirs(os.path.join(self.root, kind), exist_ok=True)
        t0 = time.perf_counter()
        if KINDS[kind]["src"] is None:
            for n in numbers:
                content, _ = source_of(kind, n, self.texts)
                tmp = self.path(kind, n) + ".tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(content)
                os.replace(tmp, self.path(kind, n))
            self.log(f"  wrote {len(numbers)} {kind} ({time.perf_counter() - t0:.0f} s)")
            return
        numbers = list(numbers)
        batches = [numbers[i:i + BATCH] for i in range(0, len(numbers), BATCH)]
        done = [0]
        lock = threading.Lock()

        def one(batch):
            self.convert(kind, batch)
            with lock:
                done[0] += len(batch)
                if done[0] % (BATCH * 10) < BATCH or done[0] == len(numbers):
                    self.log(f"  converted {done[0]}/{len(numbers)} {kind} ({time.perf_counter() - t0:.0f} s)")

        with ThreadPoolExecutor(self.jobs) as ex:
            list(ex.map(one, batches))

    def convert(self, kind, batch, retry=True):
        spec = KINDS[kind]
        work = tempfile.mkdtemp(prefix=f"conv-{kind}-", dir=self.root)
        try:
            srcs = []
            for n in batch:
                content, _ = source_of(kind, n, self.texts)
                src = os.path.join(work, f"{n:05d}.{spec['src']}")
                with open(src, "w", encoding="utf-8") as f:
                    f.write(content)
                srcs.append(src)
            out = os.path.join(work, "out")
            profile = self.profiles.get()
            try:
                cmd = [soffice(), f"-env:UserInstallation=file://{profile}", "--headless", "--norestore",
                       *spec["app"], "--convert-to", spec["filt"], "--outdir", out, *srcs]
                try:
                    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
                except subprocess.TimeoutExpired:
                    self.log(f"  soffice timed out on {kind} {batch[0]}..{batch[-1]}")
            finally:
                self.profiles.put(profile)
            missing = []
            for n in batch:
                got = os.path.join(out, f"{n:05d}.{kind}")
                if os.path.exists(got) and os.path.getsize(got) > 0:
                    os.replace(got, self.path(kind, n))
                else:
                    missing.append(n)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for n in missing:
            if retry:
                self.convert(kind, [n], retry=False)
            else:
                open(self.path(kind, n) + ".failed", "w").close()
                self.log(f"  LibreOffice made no {kind} of document {n}")


# ---------------------------------------------------------------------------------------------------
# A folder of about N MB: the first documents of each kind's pool, the shared 16, copies

def name_for(kind, n, texts):
    """Where document n of kind lives in every folder (so a smaller folder is a part of a bigger one)."""
    rng, lang = doc_rng(kind, n, "path"), doc_lang(kind, n)
    head = source_title(kind, n, texts)
    if lang == "ja":
        team, subs = JA_TEAM
        folder = [team, rng.choice(subs), rng.choice(YEARS)]
        base = re.sub(r"[\\/:*?\"<>|\s]+", "", head)[:16] or "資料"
        return "/".join(folder + [f"{base}_{n:05d}.{kind}"])
    team = rng.choice(sorted(TEAMS))
    sub, year = rng.choice(TEAMS[team]), rng.choice(YEARS)
    shape = rng.random()
    if shape < 0.45:
        folder = [team, year, sub]
    elif shape < 0.7:
        folder = [team, sub, year]
    elif shape < 0.85:
        folder = [team, "projects", rng.choice(PROJECTS), sub]
    else:
        folder = ["shared", "archive", year, team]
    words = re.findall(r"[A-Za-z0-9]+", head)[:rng.randint(2, 6)] or ["document"]
    style = rng.random()
    if style < 0.5:
        base = "-".join(w.lower() for w in words) + f"-{n:05d}"
    elif style < 0.8:
        base = " ".join(words)[:60] + f" {n:05d}"
    else:
        base = f"{year}_" + "_".join(w.lower() for w in words) + f"_{n:05d}"
    return "/".join(folder + [f"{base}.{kind}"])


def source_title(kind, n, texts):
    return texts.units(doc_lang(kind, n))[doc_start(kind, n, texts)][0]


def count_pages(path, kind):
    """PDF pages (pdfinfo; 0 when it fails), slides, sheets, EPUB spine items, else 1."""
    try:
        if kind == "pdf":
            p = subprocess.run(["pdfinfo", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            m = re.search(rb"^Pages:\s+(\d+)", p.stdout, re.M)
            return int(m.group(1)) if m else 0
        if kind in ("pptx", "xlsx", "odp", "ods", "epub"):
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
                if kind == "pptx":
                    return sum(1 for x in names if re.fullmatch(r"ppt/slides/slide\d+\.xml", x))
                if kind == "xlsx":
                    return len(re.findall(rb"<sheet\b", z.read("xl/workbook.xml")))
                if kind in ("odp", "ods"):
                    tag = rb"<draw:page[\s>]" if kind == "odp" else rb"<table:table[\s>]"
                    return len(re.findall(tag, z.read("content.xml")))
                opf = next(x for x in names if x.endswith(".opf"))
                return len(re.findall(rb"<itemref\b", z.read(opf)))
    except (OSError, KeyError, StopIteration, zipfile.BadZipFile):
        return 1
    return 1


def build_folder(size_mb, args, texts, pool, log):
    folder = os.path.join(args.root, f"size-{size_mb:g}")
    manifest_path = folder + ".json"
    if os.path.exists(manifest_path) and os.path.isdir(folder):
        with open(manifest_path, encoding="utf-8") as f:
            return folder, json.load(f)
    t0 = time.perf_counter()
    log(f"building the {size_mb:g} MB folder in {folder}")
    budget = size_mb * MB * (1 - COPY_SHARE)
    shared_dir = os.path.join(args.shared, "data", "pdf")
    shared = [(k, os.path.join(shared_dir, k)) for k in sorted(SHARED_NAMES)
              if os.path.exists(os.path.join(shared_dir, k))]
    shared_bytes = sum(os.path.getsize(p) for _, p in shared)
    chosen = {}
    for kind, spec in KINDS.items():
        target = spec["share"] * budget - (shared_bytes if kind == "pdf" else 0)
        chosen[kind] = pool.ensure(kind, max(target, 0))
    convert_s = time.perf_counter() - t0
    tmp = folder + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    files = []
    page_cache_path = os.path.join(pool.root, "pages.json")
    page_cache = {}
    if os.path.exists(page_cache_path):
        with open(page_cache_path, encoding="utf-8") as f:
            page_cache = json.load(f)

    def place(rel, src, kind, origin, lang, chars, copy_of=None):
        dst = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
        if origin not in page_cache:
            page_cache[origin] = count_pages(src, kind)
        files.append(dict(path=rel, kind=kind, bytes=os.path.getsize(dst), pages=page_cache[origin],
                          lang=lang, origin=origin, chars=chars, copy_of=copy_of))

    for name, src in shared:
        place(SHARED_NAMES[name], src, "pdf", "shared:" + name, "ja" if "japanese" in name else "en", None)
    for kind, items in chosen.items():
        for n, src, _ in items:
            _, chars = source_of(kind, n, texts)
            place(name_for(kind, n, texts), src, kind, f"{kind}:{n}", doc_lang(kind, n), chars)
    # Exact copies: COPY_SHARE of the files in the end.
    rng = random.Random(f"{SEED}:copies:{size_mb:g}")
    originals = list(files)
    taken = {f["path"] for f in files}
    for f in rng.sample(originals, round(len(originals) * COPY_SHARE / (1 - COPY_SHARE))):
        d, base = os.path.split(f["path"])
        stem, ext = os.path.splitext(base)
        other = rng.choice(originals)["path"].rsplit("/", 1)[0]
        for rel in ([f"{d}/{stem} (1){ext}", f"{d}/{stem} (2){ext}"] if rng.random() < 0.35 else
                    [f"{d}/{stem} - final{ext}"] if rng.random() < 0.2 else
                    [f"{other}/{base}", f"{other}/Copy of {base}"] if rng.random() < 0.5 else
                    [f"{other}/Copy of {base}", f"{other}/{stem} (1){ext}"]):
            if rel not in taken:
                taken.add(rel)
                place(rel, os.path.join(tmp, f["path"]), f["kind"], f["origin"], f["lang"], f["chars"],
                      copy_of=f["path"])
                break
    with open(page_cache_path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(page_cache, f)
    os.replace(page_cache_path + ".tmp", page_cache_path)
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    manifest = dict(size_mb=size_mb, files=files, build_s=time.perf_counter() - t0, convert_s=convert_s,
                    source_chars=texts.chars, built=time.strftime("%Y-%m-%d %H:%M:%S"))
    with open(manifest_path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False)
    os.replace(manifest_path + ".tmp", manifest_path)
    log(f"  built in {manifest['build_s']:.0f} s (LibreOffice and writing the pool: {convert_s:.0f} s)")
    return folder, manifest


def composition(manifest):
    files = manifest["files"]
    kinds = {}
    for f in files:
        k = kinds.setdefault(f["kind"], dict(files=0, mb=0.0, pages=0, ja_files=0, copies=0))
        k["files"] += 1
        k["mb"] += f["bytes"] / MB
        k["pages"] += f["pages"]
        k["ja_files"] += f["lang"] == "ja"
        k["copies"] += f["copy_of"] is not None
    copies = [f for f in files if f["copy_of"]]
    chars = {"en": 0, "ja": 0}
    for f in files:
        if f["chars"] and not f["copy_of"]:
            chars[f["lang"]] += f["chars"]
    pdf = [f for f in files if f["kind"] == "pdf"]
    return dict(files=len(files), mb=sum(f["bytes"] for f in files) / MB,
                pdf_files=len(pdf), pdf_mb=sum(f["bytes"] for f in pdf) / MB,
                pdf_pages=sum(f["pages"] for f in pdf), pages=sum(f["pages"] for f in files),
                copies=len(copies), copies_mb=sum(f["bytes"] for f in copies) / MB,
                text_reuse={lang: round(chars[lang] / manifest["source_chars"][lang], 2) for lang in chars},
                kinds=kinds, build_s=manifest["build_s"])


# ---------------------------------------------------------------------------------------------------
# The big PDF

def build_big_pdfs(args, texts, log):
    folder = os.path.join(args.root, "bigpdf")
    os.makedirs(folder, exist_ok=True)
    want = [200, 1000, 2000]
    todo = [p for p in want if not os.path.exists(os.path.join(folder, f"pages-{p}.pdf"))]
    if todo:
        t0 = time.perf_counter()
        work = tempfile.mkdtemp(prefix="big-", dir=args.root)
        units = sorted(texts.en, key=lambda u: u[0])      # all English units, in a fixed order
        srcs = []
        for pages in todo:
            body, chars, i = [], 0, 0
            while chars < pages * 3950:      # LibreOffice sets about 3,950 characters a page here
                head, paras = units[i % len(units)]
                body.append(f"<h2>{esc(head)}</h2>\n" + "".join(f"<p>{esc(p)}</p>\n" for p in paras))
                chars += len(head) + sum(map(len, paras))
                i += 1
            src = os.path.join(work, f"pages-{pages}.html")
            with open(src, "w", encoding="utf-8") as f:
                f.write(html_document("Collected abstracts", "en", "<h1>Collected abstracts</h1>\n" + "".join(body)))
            srcs.append(src)
        profile = os.path.join(args.root, "lo-profile-big")
        subprocess.run([soffice(), f"-env:UserInstallation=file://{profile}", "--headless", "--norestore",
                        "--writer", "--convert-to", "pdf:writer_pdf_Export", "--outdir", folder, *srcs],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(profile, ignore_errors=True)
        log(f"  big PDFs built in {time.perf_counter() - t0:.0f} s")
    return [os.path.join(folder, f"pages-{p}.pdf") for p in want]


# ---------------------------------------------------------------------------------------------------
# Running a command and watching its memory

def proc_status(pid):
    """(VmRSS, VmHWM) of a process in KiB, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            data = f.read()
    except OSError:
        return None
    rss = re.search(rb"VmRSS:\s+(\d+)", data)
    hwm = re.search(rb"VmHWM:\s+(\d+)", data)
    if not rss:
        return None
    return int(rss.group(1)), int(hwm.group(1)) if hwm else 0


def descendants(pid):
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tids:
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                continue
            out += kids
            stack += kids
    return out


class Watch(threading.Thread):
    """Samples a process tree every `every` seconds: the main process's VmHWM, the peak sum of VmRSS
    over the process and all its descendants, the largest VmHWM of a descendant, the most processes."""

    def __init__(self, pid, every=0.05):
        super().__init__(daemon=True)
        self.pid, self.every, self.stop = pid, every, threading.Event()
        self.main_hwm = self.tree_peak = self.child_hwm = 0
        self.procs = 1

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.every)

    def sample(self):
        main = proc_status(self.pid)
        if main is None:
            return
        total = main[0]
        self.main_hwm = max(self.main_hwm, main[1])
        kids = descendants(self.pid)
        self.procs = max(self.procs, 1 + len(kids))
        for k in kids:
            s = proc_status(k)
            if s:
                total += s[0]
                self.child_hwm = max(self.child_hwm, s[1])
        self.tree_peak = max(self.tree_peak, total)


def run_watched(cmd, stdin_text="", timeout=None):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    w = Watch(p.pid)
    w.start()
    try:
        out, err = p.communicate(stdin_text.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        err += b"\n(killed by folders.py: timed out)"
    wall = time.perf_counter() - t0
    w.stop.set()
    w.join()
    err_lines = [l for l in err.decode("utf-8", "replace").splitlines() if l.strip()]
    warnings = [l for l in err_lines if l.startswith("rag.py: warning")]
    return dict(s=wall, exit=p.returncode, last_stderr=err_lines[-1][:300] if err_lines else "",
                stderr_tail=err_lines[-12:], warnings=len(warnings), warning_lines=warnings[:40],
                main_peak_mib=w.main_hwm / 1024, tree_peak_mib=w.tree_peak / 1024,
                worker_peak_mib=w.child_hwm / 1024, processes=w.procs,
                json_lines=sum(1 for l in out.decode("utf-8", "replace").splitlines() if l.startswith("{")))


# ---------------------------------------------------------------------------------------------------
# Floors

PYPDF = r'''
import json, logging, sys, time, warnings
logging.disable(logging.CRITICAL)
warnings.simplefilter("ignore")
t = time.perf_counter()
from pypdf import PdfReader
files = [f for f in open(sys.argv[1], "rb").read().decode("utf-8").split("\0") if f]
pages = chars = 0
failed = {}
for f in files:
    try:
        r = PdfReader(f)
        if r.is_encrypted:
            r.decrypt("")
        n = len(r.pages)
    except Exception as e:
        failed[f] = "cannot open: " + repr(e)[:150]
        continue
    bad = 0
    for i in range(n):
        try:
            chars += len(r.pages[i].extract_text() or "")
            pages += 1
        except Exception as e:
            bad += 1
            last = repr(e)[:150]
    if bad:
        failed[f] = "%d of %d pages failed: %s" % (bad, n, last)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps(dict(s=time.perf_counter() - t, pages=pages, chars=chars, failed=failed,
                      peak_mib=int(hwm) / 1024)))
'''


def floors(pdfs, args, work):
    """pdftotext one at a time, pdftotext through xargs -P nproc, and pypdf, on the same PDFs."""
    out = {}
    if not shutil.which("pdftotext"):
        return dict(error="pdftotext is not installed: apt-get install -y poppler-utils")
    t0 = time.perf_counter()
    failed = []
    for f in pdfs:
        p = subprocess.run(["pdftotext", "-q", "-enc", "UTF-8", f, "-"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if p.returncode:
            failed.append(os.path.basename(f))
    out["pdftotext"] = dict(s=time.perf_counter() - t0, files=len(pdfs), failed=len(failed), failed_files=failed,
                            command="pdftotext -q -enc UTF-8 FILE - > /dev/null, for each PDF in turn")
    listing = os.path.join(work, "pdfs.list0")
    with open(listing, "wb") as f:
        f.write(b"\0".join(p.encode("utf-8") for p in pdfs) + b"\0")
    n = os.cpu_count() or 1
    cmd = f"xargs -0 -P {n} -I{{}} pdftotext -q -enc UTF-8 {{}} - < {shlex.quote(listing)} > /dev/null"
    t0 = time.perf_counter()
    p = subprocess.run(["bash", "-c", cmd], stderr=subprocess.DEVNULL)
    out["pdftotext_parallel"] = dict(s=time.perf_counter() - t0, processes=n, exit=p.returncode,
                                     command=cmd.replace(listing, "LIST"))
    if args.no_pypdf:
        return out
    py = args.pypdf_python
    if not (py and os.path.exists(py)):
        out["pypdf"] = dict(error=f"no {py}: python3 -m venv /tmp/ragbench && /tmp/ragbench/bin/pip install pypdf")
        return out
    script = os.path.join(work, "pypdf_floor.py")
    with open(script, "w") as f:
        f.write(PYPDF)
    t0 = time.perf_counter()
    p = subprocess.run([py, script, listing], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    try:
        r = json.loads(p.stdout.decode().strip().splitlines()[-1])
        fails = r.pop("failed")
        r.update(wall_s=wall, failed=len(fails), failed_files={os.path.basename(k): v for k, v in fails.items()})
    except (ValueError, IndexError):
        r = dict(wall_s=wall, exit=p.returncode, error=p.stderr.decode("utf-8", "replace")[-300:])
    r["command"] = f"{py} -c 'PdfReader(f).pages[i].extract_text() for every page of every PDF' (one process)"
    out["pypdf"] = r
    return out


# ---------------------------------------------------------------------------------------------------
# One size

def backup_path(args, rel):
    return os.path.join(args.root, "changed-backup", rel.replace("/", "%"))


def restore_pending(args, log):
    """Put back files a run changed and did not restore (it was stopped)."""
    d = os.path.join(args.root, "changed-backup")
    if not os.path.isdir(d):
        return
    for name in os.listdir(d):
        size_dir, _, rel = name.replace("%", "/").partition("/")
        target = os.path.join(args.root, size_dir, rel)
        if os.path.isdir(os.path.join(args.root, size_dir)):
            shutil.copyfile(os.path.join(d, name), target)
            log(f"restored {target}")
        os.remove(os.path.join(d, name))


def change_file(args, folder, rel, how, texts, other=None):
    target = os.path.join(folder, rel)
    key = os.path.basename(folder) + "/" + rel
    os.makedirs(os.path.join(args.root, "changed-backup"), exist_ok=True)
    shutil.copyfile(target, backup_path(args, key))
    if how == "append":
        with open(target, "a", encoding="utf-8") as f:
            f.write("\n\n" + "\n\n".join(texts.en[7][1]) + "\n")
    else:
        shutil.copyfile(os.path.join(folder, other), target)
    return key


def restore(args, folder, key):
    b = backup_path(args, key)
    if os.path.exists(b):
        shutil.copyfile(b, os.path.join(folder, key.split("/", 1)[1]))
        os.remove(b)


def measure_size(size_mb, folder, manifest, args, texts, log):
    comp = composition(manifest)
    row = dict(size_mb=size_mb, folder=folder, **{k: v for k, v in comp.items() if k != "kinds"},
               kinds=comp["kinds"])
    t_start = time.perf_counter()
    cache = tempfile.mkdtemp(prefix=f"cache-{size_mb:g}-", dir=args.root)
    work = tempfile.mkdtemp(prefix=f"work-{size_mb:g}-", dir=args.root)
    qs = texts.questions(args.questions)
    one = qs[0] + "\n"
    cmd = [args.python, args.rag, "--docs", folder, "--search", "--json", "-k", "10", "--cache", cache]
    cmd += shlex.split(args.rag_args)
    row["rag_command"] = " ".join(shlex.quote(c) for c in cmd) + "  (questions on stdin)"
    changed = []
    try:
        if args.rag_runs:
            log(f"  rag.py first run on {comp['files']} files, {comp['mb']:.1f} MB ...")
            first = run_watched(cmd, one, args.timeout)
            first.update(files_per_s=comp["files"] / first["s"], pages_per_s=comp["pages"] / first["s"],
                         mb_per_s=comp["mb"] / first["s"])
            first["index_mb"] = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(cache)
                                    for f in fs) / MB          # rag.py's index on disk after it
            row["first"] = first
            log(f"    {first['s']:.1f} s, exit {first['exit']}" + (f": {first['last_stderr']}" if first["exit"] else ""))
            runs = [run_watched(cmd, one, args.timeout) for _ in range(2)]
            best = min(runs, key=lambda r: (r["exit"] != 0, r["s"]))
            row["second"] = dict(best, s_runs=[r["s"] for r in runs], exits=[r["exit"] for r in runs],
                                 main_peak_mib=max(r["main_peak_mib"] for r in runs),
                                 tree_peak_mib=max(r["tree_peak_mib"] for r in runs))
            log(f"    second run {best['s']:.2f} s, exit {best['exit']}")
            many = run_watched(cmd, "".join(q + "\n" for q in qs), args.timeout)
            row["questions"] = dict(many, n=len(qs),
                                    ms_per_question=(many["s"] - best["s"]) / (len(qs) - 1) * 1000
                                    if many["exit"] == 0 and best["exit"] == 0 else None)
            mds = sorted(f["path"] for f in manifest["files"] if f["kind"] == "md" and not f["copy_of"])
            docx = sorted(f["path"] for f in manifest["files"] if f["kind"] == "docx" and not f["copy_of"])
            if mds:
                changed.append(change_file(args, folder, mds[0], "append", texts))
                r = run_watched(cmd, one, args.timeout)
                row["changed_md"] = dict(r, file=mds[0], how="a paragraph of real text appended")
                log(f"    one .md changed {r['s']:.2f} s, exit {r['exit']}")
            if len(docx) >= 2:
                changed.append(change_file(args, folder, docx[0], "copy", texts, other=docx[-1]))
                r = run_watched(cmd, one, args.timeout)
                row["changed_docx"] = dict(r, file=docx[0], how=f"{docx[-1]} copied over it")
                log(f"    one .docx rewritten {r['s']:.2f} s, exit {r['exit']}")
        if args.floor:
            pdfs = sorted(os.path.join(folder, f["path"]) for f in manifest["files"] if f["kind"] == "pdf")
            log(f"  floors on {len(pdfs)} PDFs ...")
            row["floors"] = floors(pdfs, args, work)
            fl = row["floors"]
            if "first" in row and "pdftotext" in fl:
                row["rag_over_pdftotext"] = row["first"]["s"] / fl["pdftotext"]["s"]
    finally:
        for key in changed:
            restore(args, folder, key)
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    row["bench_s"] = time.perf_counter() - t_start
    return row


def measure_big(paths, args, log):
    rows = []
    work = tempfile.mkdtemp(prefix="work-big-", dir=args.root)
    try:
        for path in paths:
            cache = tempfile.mkdtemp(prefix="cache-big-", dir=args.root)
            try:
                pages = count_pages(path, "pdf")
                cmd = [args.python, args.rag, "--docs", path, "--search", "-k", "1", "--cache", cache,
                       *shlex.split(args.rag_args), "x"]
                log(f"  rag.py on {os.path.basename(path)} ({pages} pages) ...")
                r = run_watched(cmd, "", args.timeout)
                row = dict(file=path, pages=pages, mb=os.path.getsize(path) / MB, rag=r,
                           rag_command=" ".join(shlex.quote(c) for c in cmd))
                if args.floor:
                    row["floors"] = floors([path], args, work)
                rows.append(row)
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


# ---------------------------------------------------------------------------------------------------
# Report

def fmt_run(r):
    if r is None:
        return "not run"
    s = f"{r['s']:8.2f} s  main {r['main_peak_mib']:5.0f} MiB  tree {r['tree_peak_mib']:6.0f} MiB ({r['processes']} proc.)"
    if r.get("warnings"):
        s += f"  {r['warnings']} warnings"
    if r["exit"]:
        s += f"  FAILED exit {r['exit']}: {r['last_stderr']}"
    return s


def print_size(row):
    print(f"\n== about {row['size_mb']:g} MB: {row['folder']}")
    print(f"   {row['files']} files, {row['mb']:.1f} MB, {row['pdf_files']} PDFs ({row['pdf_mb']:.1f} MB, "
          f"{row['pdf_pages']} pages), {row['pages']} pages in all; {row['copies']} exact copies "
          f"({row['copies'] / row['files']:.1%} of the files, {row['copies_mb']:.1f} MB); built in {row['build_s']:.0f} s")
    print(f"   {'kind':<5} {'files':>6} {'MB':>7} {'pages':>7} {'ja':>5} {'copies':>6}")
    for k, v in sorted(row["kinds"].items(), key=lambda kv: -kv[1]["mb"]):
        print(f"   {k:<5} {v['files']:6d} {v['mb']:7.1f} {v['pages']:7d} {v['ja_files']:5d} {v['copies']:6d}")
    if "first" in row:
        f = row["first"]
        print(f"   rag.py first run    {fmt_run(f)}")
        if f["exit"] == 0:
            print(f"                       {f['files_per_s']:.1f} files/s, {f['pages_per_s']:.1f} pages/s, "
                  f"{f['mb_per_s']:.2f} MB/s")
        else:
            print("                       (no rates: the run failed)")
        if "index_mb" in f:
            print(f"                       index on disk (--cache) after it: {f['index_mb']:.1f} MB")
        print(f"   second run (best/2) {fmt_run(row['second'])}")
        q = row["questions"]
        qtxt = f"{q['ms_per_question']:.1f} ms a question" if q["ms_per_question"] is not None else "n/a"
        print(f"   {q['n']} questions     {fmt_run(q)}  -> {qtxt}")
        if "changed_md" in row:
            print(f"   one .md changed     {fmt_run(row['changed_md'])}")
        if "changed_docx" in row:
            print(f"   one .docx rewritten {fmt_run(row['changed_docx'])}")
    fl = row.get("floors")
    if fl:
        if "error" in fl:
            print(f"   floors: {fl['error']}")
            return
        p = fl["pdftotext"]
        print(f"   floor pdftotext     {p['s']:8.2f} s  ({p['files']} PDFs one at a time, {p['failed']} failed"
              + (f": {', '.join(p['failed_files'][:5])}" if p["failed"] else "") + ")")
        pp = fl["pdftotext_parallel"]
        print(f"   floor pdftotext -P{pp['processes']} {pp['s']:7.2f} s  (xargs exit {pp['exit']})")
        y = fl.get("pypdf")
        if y:
            if "error" in y:
                print(f"   floor pypdf         {y['error']}")
            else:
                print(f"   floor pypdf         {y['wall_s']:8.2f} s  ({y['pages']} pages, {y['failed']} PDFs failed or "
                      f"partly failed, peak {y['peak_mib']:.0f} MiB)")
        if "rag_over_pdftotext" in row:
            ok = "" if row["first"]["exit"] == 0 else " (rag.py failed: its seconds are those until it stopped)"
            print(f"   rag.py first run / pdftotext one at a time = {row['rag_over_pdftotext']:.2f}{ok}")
    print(f"   this size took {row['bench_s']:.0f} s to measure")


def print_big(rows):
    print("\n== one big PDF, read alone (rag.py --docs THAT.pdf --search -k 1 x, fresh --cache)")
    for r in rows:
        fl = r.get("floors", {})
        extra = ""
        if fl.get("pdftotext"):
            extra += f"  pdftotext {fl['pdftotext']['s']:.2f} s"
        if fl.get("pypdf") and "wall_s" in fl["pypdf"]:
            extra += f"  pypdf {fl['pypdf']['wall_s']:.2f} s ({fl['pypdf']['peak_mib']:.0f} MiB)"
        print(f"   {r['pages']:5d} pages {r['mb']:6.1f} MB  rag.py {fmt_run(r['rag'])}{extra}")


def file_digest(path):
    import hashlib
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=float, nargs="*", default=[20, 200, 1000], help="folder sizes in MB")
    ap.add_argument("--rag", default=os.path.join(REPO, "rag.py"))
    ap.add_argument("--python", default=sys.executable, help="the interpreter that runs rag.py")
    ap.add_argument("--rag-args", default="", help="more rag.py flags, one string")
    ap.add_argument("--no-floor", dest="floor", action="store_false", help="skip pdftotext and pypdf")
    ap.add_argument("--no-pypdf", action="store_true", help="skip the pypdf floor only")
    ap.add_argument("--no-rag", dest="rag_runs", action="store_false", help="measure the floors only")
    ap.add_argument("--pypdf-python", default="/tmp/ragbench/bin/python")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--big-pdf", action="store_true", help="also the 200, 1,000 and 2,000-page PDF check")
    ap.add_argument("--build-only", action="store_true", help="build the folders (and big PDFs) and stop")
    ap.add_argument("--questions", type=int, default=200, help="piped questions for the per-question cost")
    ap.add_argument("--timeout", type=float, default=7200, help="seconds before a rag.py run is stopped")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="LibreOffice processes")
    ap.add_argument("--root", default=ROOT, help="where data is cached (default %(default)s)")
    ap.add_argument("--shared", default=SHARED, help="../shared/bench (data/ with the corpora and pdf/)")
    args = ap.parse_args()
    args.rag = os.path.abspath(args.rag)
    os.makedirs(args.root, exist_ok=True)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    # One folders.py at a time on a root: two would time each other's load and restore each other's files.
    lock = open(os.path.join(args.root, ".lock"), "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        log(f"another folders.py is running on {args.root}: waiting for it to end")
        fcntl.flock(lock, fcntl.LOCK_EX)
    restore_pending(args, log)
    texts = Texts(os.path.join(args.shared, "data"))
    pool = Pool(args.root, texts, args.jobs, log)
    built = [(s, *build_folder(s, args, texts, pool, log)) for s in sorted(args.sizes)]
    big = build_big_pdfs(args, texts, log) if args.big_pdf else []
    for i in range(args.jobs):
        shutil.rmtree(os.path.join(args.root, f"lo-profile-{i}"), ignore_errors=True)
    result = dict(rag=args.rag, rag_sha256=file_digest(args.rag), rag_args=args.rag_args, python=args.python,
                  cpus=os.cpu_count(), started=time.strftime("%Y-%m-%d %H:%M:%S"), sizes=[], big_pdf=[])
    if not args.json and not args.build_only:
        print(f"rag.py: {args.rag} (sha256 {result['rag_sha256'][:12]}), {args.python}, {os.cpu_count()} CPUs")
    if args.build_only:
        for s, folder, manifest in built:
            c = composition(manifest)
            result["sizes"].append(dict(size_mb=s, folder=folder, **c))
            if not args.json:
                print(f"{s:g} MB: {folder}: {c['files']} files, {c['mb']:.1f} MB, {c['pages']} pages "
                      f"({c['pdf_pages']} PDF pages), {c['copies']} copies, built in {c['build_s']:.0f} s")
        if args.json:
            print(json.dumps(result, indent=1, ensure_ascii=False))
        return
    for s, folder, manifest in built:
        row = measure_size(s, folder, manifest, args, texts, log)
        result["sizes"].append(row)
        if not args.json:
            print_size(row)
            sys.stdout.flush()
    if big:
        result["big_pdf"] = measure_big(big, args, log)
        if not args.json:
            print_big(result["big_pdf"])
    if args.json:
        print(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
