#!/usr/bin/env python3
"""Hostile files: small files that unfold into gigabytes, or break one part of themselves, as an attacker
would drop them into a folder that rag.py reads (a shared drive, a downloaded archive, the folder behind
--serve). Each is built here, from the structure of its format, and read by rag.py beside a good file:

    python3 .ci/bench/hostile.py                     # rag.py two folders up from here
    python3 .ci/bench/hostile.py --rag OTHER/rag.py  # another version, for a before and after
    python3 .ci/bench/hostile.py --only ods          # the files whose names hold "ods"

For each file: its size, the seconds and the peak memory of `rag.py --docs FOLDER --search ...` (the
folder: the file and the handbook; memory is capped at --memory-gb, and a run at --seconds), whether the
handbook was still found, what was kept of the file (its chunks, from --list --json), and the lines rag.py
said (the first, cut to 110 characters). The goal: at most 10 s and 500 MB each, one line, the rest of
the folder indexed, the good parts of the file kept, no traceback. Nothing here is run by CI.
"""
import argparse
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
QUESTION = "When do I have to file my expense report?"


def zipped(parts, level=zipfile.ZIP_DEFLATED):
    """Return the bytes of a zip archive of {name: text or bytes}."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", level) as archive:
        for name, content in parts.items():
            archive.writestr(name, content.encode("utf-8") if isinstance(content, str) else content)
    return out.getvalue()


OFFICE = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
ODF_NS = (OFFICE + ' xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')
SHEET = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
RELS = 'xmlns="http://schemas.openxmlformats.org/package/2006/relationships"'
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
WORD = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def ods(body, kind="spreadsheet"):
    return zipped({"mimetype": f"application/vnd.oasis.opendocument.{kind}",
                   "content.xml": f"<office:document-content {ODF_NS}><office:body><office:{kind}>{body}"
                                  f"</office:{kind}></office:body></office:document-content>"})


def xlsx(sheet_rows, shared=None):
    """An XLSX of one sheet whose rows are given as XML, with shared strings (XML of <si> items) if any."""
    parts = {"xl/workbook.xml": f'<workbook {SHEET} xmlns:r="{REL[:-1]}"><sheets><sheet name="S" sheetId="1" '
                                'r:id="rId1"/></sheets></workbook>',
             "xl/_rels/workbook.xml.rels": f'<Relationships {RELS}><Relationship Id="rId1" Type="{REL}worksheet" '
                                           'Target="worksheets/sheet1.xml"/>'
                                           + (f'<Relationship Id="rId2" Type="{REL}sharedStrings" '
                                              'Target="sharedStrings.xml"/>' if shared is not None else "")
                                           + "</Relationships>",
             "xl/worksheets/sheet1.xml": f"<worksheet {SHEET}><sheetData>{sheet_rows}</sheetData></worksheet>"}
    if shared is not None:
        parts["xl/sharedStrings.xml"] = f"<sst {SHEET}>{shared}</sst>"
    return zipped(parts)


def docx(body, head=""):
    return zipped({"_rels/.rels": f'<Relationships {RELS}><Relationship Id="rId1" Type="{REL}officeDocument" '
                                  'Target="/word/document.xml"/></Relationships>',
                   "word/document.xml": f"{head}<w:document {WORD}><w:body>{body}</w:body></w:document>"})


def epub(spine, chapters):
    """An EPUB whose spine names these ids, with chapters {id: (file name, XHTML) or (file name, None)}."""
    items = "".join(f'<item id="{i}" href="{name}" media-type="application/xhtml+xml"/>' for i, (name, _) in chapters.items())
    parts = {"mimetype": "application/epub+zip",
             "META-INF/container.xml": '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                                       'version="1.0"><rootfiles><rootfile full-path="OEBPS/content.opf" '
                                       'media-type="application/oebps-package+xml"/></rootfiles></container>',
             "OEBPS/content.opf": '<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><manifest>' + items
                                  + "</manifest><spine>" + "".join(f'<itemref idref="{i}"/>' for i in spine)
                                  + "</spine></package>"}
    parts.update({f"OEBPS/{name}": text for name, text in chapters.values() if text is not None})
    return zipped(parts)


def pdf(pages, extra_fonts=b"", resources=b""):
    """A PDF of these page content streams (Courier as F1; extra font objects as given, from 4 + pages on;
    more resources as given)."""
    count = len(pages)
    objects = [b"<</Type/Catalog/Pages 2 0 R>>",
               b"<</Type/Pages/Kids[%s]/Count %d>>" % (b" ".join(b"%d 0 R" % (4 + count + i) for i in range(count)), count),
               b"<</Type/Font/Subtype/Type1/BaseFont/Courier/Encoding/WinAnsiEncoding>>"]
    objects += [b"<</Length %d>>stream\n%s\nendstream" % (len(content), content) for content in pages]
    objects += [b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Resources<</Font<</F1 3 0 R%s>>%s>>/Contents %d 0 R>>"
                % (extra_fonts and b"/F2 %d 0 R" % (4 + 2 * count), resources, 4 + i) for i in range(count)]
    if extra_fonts:
        objects.append(extra_fonts)
    out, offsets = bytearray(b"%PDF-1.7\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


GOOD_PAGE = b"BT /F1 11 Tf 72 700 Td (Travel claims are paid within ten working days.) Tj ET"


def hostile_files():
    """Yield (name, bytes) of each hostile file."""
    big_cell = "word " * 2000  # 10 KB
    yield "ods-repeated-cell.ods", ods(f'<table:table table:name="T"><table:table-row table:number-rows-repeated="1000">'
                                      f'<table:table-cell table:number-columns-repeated="1000"><text:p>{big_cell}</text:p>'
                                      "</table:table-cell></table:table-row></table:table>")
    yield "ods-many-cells-a-row.ods", ods('<table:table table:name="T"><table:table-row table:number-rows-repeated="1000">'
                                         + f'<table:table-cell table:number-columns-repeated="1000"><text:p>{big_cell}'
                                         "</text:p></table:table-cell>" * 16 + "</table:table-row></table:table>")
    yield "xlsx-one-shared-string.xlsx", xlsx("".join(f'<row r="{r}">' + "".join('<c t="s"><v>0</v></c>' for _ in range(20))
                                                      + "</row>" for r in range(1, 1001)), f"<si><t>{big_cell}</t></si>")
    yield "xlsx-many-shared-strings.xlsx", xlsx('<row r="1"><c t="s"><v>1</v></c></row>',
                                                "".join(f"<si><t>s{n}</t></si>" for n in range(3500000)))
    yield "xlsx-million-rows.xlsx", xlsx("".join(f'<row r="{r}"><c t="inlineStr"><is><t>row {r}</t></is></c>'
                                                 f"<c><v>{r * 7}</v></c></row>" for r in range(1, 1000001)))
    chapter = "<html><body><h1>One</h1><p>" + "The same chapter again. " * 1200 + "</p></body></html>"
    yield "epub-spine-repeats.epub", epub(["c1"] * 100000, {"c1": ("one.xhtml", chapter)})
    yield "epub-missing-chapter.epub", epub(["c1", "c2", "c3"], {"c1": ("one.xhtml", chapter), "c2": ("gone.xhtml", None),
                                                                 "c3": ("three.xhtml", chapter.replace("One", "Three"))})
    yield "pdf-300000-pieces.pdf", pdf([GOOD_PAGE, b"BT /F1 1 Tf " + b"(a) Tj 1 0 Td " * 300000 + b"ET"])
    widths = b"<</Type/Font/Subtype/TrueType/BaseFont/W/FirstChar 0/LastChar 299999/Widths[%s]>>" % (b"500 " * 300000)
    yield "pdf-300000-widths.pdf", pdf([GOOD_PAGE, b"BT /F2 11 Tf 72 700 Td (x) Tj ET"], widths)
    yield "pdf-actual-text-named.pdf", pdf([GOOD_PAGE, b"BT /F1 11 Tf 72 700 Td " + b"/Span /A BDC (x) Tj EMC " * 50000 + b"ET"],
                                           resources=b"/Properties<</A<</ActualText(%s)>>>>" % (b"lorem ipsum " * 800))
    yield "pdf-tj-nested.pdf", pdf([GOOD_PAGE, b"BT /F1 11 Tf 72 700 Td " + b"[" * 200 + b"(x)" + b"]" * 200 + b" TJ ET"])
    yield "docx-expands-1000x.docx", docx("<w:p><w:r><w:t>" + " " * 60_000_000 + "</w:t></w:r></w:p>")
    yield "docx-entities.docx", docx("<w:p><w:r><w:t>&e9;</w:t></w:r></w:p>",
                                     '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY e0 "lol">'
                                     + "".join(f'<!ENTITY e{n} "{("&e%d;" % (n - 1)) * 10}">' for n in range(1, 10)) + "]>")
    yield "docx-nested-deep.docx", docx("<w:p>" * 100000 + "</w:p>" * 100000)
    yield "html-nested-deep.html", ("<div>" * 200000 + "Deep text." + "</div>" * 200000).encode()
    yield "odt-repeated-cells.odt", ods('<table:table><table:table-row table:number-rows-repeated="1000">'
                                       '<table:table-cell table:number-columns-repeated="1000"><text:p>' + big_cell
                                       + "</text:p></table:table-cell></table:table-row></table:table>", "text")
    yield "name-\x1b]0;pwned\x07-\x1b[31m.md", b"# Names\n\nA file whose name sets the terminal's title."


def measured(command, memory_gb, seconds):
    """Return (exit code, seconds, peak MiB, stdout, stderr) of command, its memory capped at memory_gb."""
    def limit():
        cap = int(memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, timeout=seconds, preexec_fn=limit)
        code, out, err = done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        code, out, err = "timeout", (e.stdout or b"").decode(), (e.stderr or b"").decode()
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return code, time.perf_counter() - started, max(peak, before) / 1024, out, err


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rag", default=os.path.join(ROOT, "rag.py"))
    parser.add_argument("--only", default="", help="only the files whose names hold this")
    parser.add_argument("--memory-gb", type=float, default=4.0)
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="rag-hostile-")
    try:
        print(f"{'file':<30} {'bytes':>10} {'s':>6} {'MiB':>6} {'handbook':>8} {'kept':>5}  said")
        for name, content in hostile_files():
            if args.only not in name:
                continue
            folder = os.path.join(work, name.replace("\x1b", "").replace("\x07", "")[:20] + "-folder")
            os.makedirs(folder)
            shutil.copy(os.path.join(ROOT, "handbook.txt"), folder)
            with open(os.path.join(folder, name), "wb") as f:
                f.write(content)
            cache = os.path.join(work, "cache-" + str(len(os.listdir(work))))
            # Each run in a launcher of its own: the peak memory of children is the largest child's so far.
            launcher = [sys.executable, "-c", "import resource, subprocess, sys, json; r = subprocess.run(sys.argv[1:]); "
                        "print(json.dumps(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss), file=sys.stderr); "
                        "sys.exit(r.returncode)"]
            command = [sys.executable, args.rag, "--docs", folder, "--cache", cache, "--search", "--json", "-k", "3", QUESTION]
            code, seconds, _, out, err = measured(launcher + command, args.memory_gb, args.seconds)
            lines = err.strip().splitlines()
            peak = int(lines.pop()) / 1024 if lines and lines[-1].isdigit() else float("nan")
            found = "yes" if "handbook.txt" in out else "NO"
            kept = "-"  # (what was kept of the file: --list reads the index the run left, when it ended)
            if code in (0, 1):
                listed = measured([sys.executable, args.rag, "--docs", folder, "--cache", cache, "--list", "--json"],
                                  args.memory_gb, args.seconds)[3]
                records = [json.loads(line) for line in listed.splitlines() if line.startswith("{")]
                kept = next((r["chunks"] for r in records if r["source"] != "handbook.txt"), "-")
            said = (lines[0] if lines else "") if code in (0, 1) else f"exit {code}: {(lines or [''])[-1]}"
            traceback = " TRACEBACK" if "Traceback" in err else ""
            print(f"{name.encode('unicode_escape').decode()[:30]:<30} {len(content):>10,} {seconds:>6.1f} {peak:>6.0f} "
                  f"{found:>8} {kept:>5}  {said[:110]}{traceback}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
