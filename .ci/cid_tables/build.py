#!/usr/bin/env python3
"""Build rag.py's CID_TABLES: CID -> Unicode text for Adobe-Japan1-7, Adobe-GB1-6, Adobe-CNS1-7 and Adobe-Korea1-2.
Not run by CI (it needs Adobe's files); run it when Adobe publishes a supplement, then verify.py.

Sources (Adobe's published data, read from git mirrors in $ADOBE_MIRRORS (owner+repo/repo, as the tool
library's fetch makes them) when present, else from copies in $ADOBE_SRC/<repo>/<path>):
  adobe-type-tools/cmap-resources  Uni*-UTF32-H/-V and Uni*-UCS2(-HW)-H/-V CMaps, cid2code.txt
  adobe-type-tools/Adobe-Japan1, -GB1, -CNS1  GSUB/*.fea (OpenType features), *_sequences.txt (IVD)

Layers, each only filling CIDs that have no text yet:
  core   inverse of the Uni CMaps (H and V, UTF-32 first, then the old UCS-2 ones); of several code points
         the regular one: not PUA, not a vertical presentation form (a vertical-form CID takes the horizontal
         character of the -V CMap), not a radical or compatibility ideograph, not a combining mark or modifier
         letter; ties go to what Python's legacy codec gives for the CID's legacy code, then the lowest.
  ivd    base character of the CID's registered ideographic variation sequence (kanji variants)
  codec  Python's legacy codec on the CID's code in a legacy CMap column of cid2code.txt, only for code rows
         (lead bytes) where that codec agrees with every core mapping of the row
  xref   one-byte half-width Latin of Korea1 (KSC-EUC) = the proportional CID of the same byte (KSCms-UHC);
         GB1 half-width pinyin (GB row 11) = the pinyin of GB 2312 row 8, cell for cell
  gsub   text of a glyph related by a same-text GSUB feature (width, vertical, italic, ruby, kana and kanji
         variants; forward then backward; of several, an NFKC-stable one), ligature components joined (dlig,
         liga, ccmp, afrc, frac), and the base character of an annotation form (nalt: circled, boxed, ...)
  vert   a text that is still a vertical presentation form becomes its horizontal character (GSUB vert
         source, else NFKC): "︙" -> "…"
Encoding (see encode): items in CID order, each a run of consecutive code points, one code point, a run of
consecutive cells of a legacy codec (Adobe's CIDs follow JIS X 0208/0213, GB 2312, GBK, Big5, HKSCS and KS X
1001 order), a copy of earlier CIDs' texts, or a text of several characters; varints, zlib level 9, base85.
The codecs used and the shortest codec run are chosen per ordering by trying, for the smallest data.
Usage: python3 .ci/cid_tables/build.py [--core] [--rag rag.py]
  --core: only the core layer; --rag: write the tables into rag.py's last appendix (else to /tmp/cid_tables.py).
  rag.py's CID_CODECS must list the codecs this prints, in its order.
"""
import base64, collections, os, re, subprocess, sys, textwrap, unicodedata as ud, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
MIRROR = os.environ.get('ADOBE_MIRRORS', '/work/.mirror') + '/adobe-type-tools+%s/repo'
SRC = os.environ.get('ADOBE_SRC', '/tmp/adobe-src')
ORDERINGS = {  # ordering: (cmap-resources dir, UTF-32 CMaps, UCS-2 CMaps, legacy hint codecs, GSUB, IVD repo)
    'Japan1': ('Adobe-Japan1-7', ['UniJIS-UTF32', 'UniJIS2004-UTF32', 'UniJISX0213-UTF32', 'UniJISX02132004-UTF32'],
               ['UniJIS-UCS2', 'UniJIS-UCS2-HW', 'UniJISPro-UCS2', 'UniJISPro-UCS2-HW'],
               {'EUC': 'euc_jp', '90ms-RKSJ': 'cp932', 'RKSJ': 'shift_jis'}, 'GSUB/aj17-gsub.fea', 'Adobe-Japan1'),
    'GB1': ('Adobe-GB1-6', ['UniGB-UTF32'], ['UniGB-UCS2'], {'GB-EUC': 'gb2312', 'GBK-EUC': 'gbk', 'GBK2K': 'gb18030'},
            'GSUB/ag16-gsub.fea', 'Adobe-GB1'),
    'CNS1': ('Adobe-CNS1-7', ['UniCNS-UTF32'], ['UniCNS-UCS2'], {'ETen-B5': 'cp950', 'B5': 'big5', 'HKscs-B5': 'big5hkscs'},
             'GSUB/ac17-gsub.fea', 'Adobe-CNS1'),
    'Korea1': ('Adobe-Korea1-2', ['UniKS-UTF32'], ['UniKS-UCS2'], {'KSC-EUC': 'euc_kr', 'KSCms-UHC': 'cp949'}, None, None)}
LEGACY = {  # (cid2code column, codec) tried by the codec layer, in order (Mac columns left out)
    'Japan1': [('90ms-RKSJ', 'cp932'), ('Ext-RKSJ', 'cp932'), ('78ms-RKSJ', 'cp932'), ('Add-RKSJ', 'cp932'), ('78-EUC', 'euc_jp')],
    'GB1': [('GBK2K', 'gb18030'), ('GBK-EUC', 'gbk'), ('GB-EUC', 'gb2312')],
    'CNS1': [('HKscs-B5', 'big5hkscs'), ('ETHK-B5', 'big5hkscs'), ('ETen-B5', 'big5hkscs'), ('ETen-B5', 'cp950'), ('B5', 'big5')],
    'Korea1': [('KSCms-UHC', 'cp949'), ('KSC-EUC', 'euc_kr')]}
SAME_TEXT = {'hwid', 'fwid', 'pwid', 'qwid', 'twid', 'vert', 'vrt2', 'ital', 'ruby', 'hkna', 'vkna', 'pkna',
             'jp78', 'jp83', 'jp04', 'nlck', 'expt', 'hojo', 'zero'}
LIGATURES = {'dlig', 'liga', 'ccmp', 'afrc', 'frac'}
# Legacy codecs whose code order Adobe's CID order follows: name: (codec, prefix byte, first lead byte, trail
# bytes); cells run row-major over the trail bytes, lead bytes counting up (no gaps are skipped)
EUC, BIG5, GBK = list(range(0xA1, 0xFF)), list(range(0x40, 0x7F)) + list(range(0xA1, 0xFF)), \
    list(range(0x40, 0x7F)) + list(range(0x80, 0xFF))
CODECS = {'euc_jp': ('euc_jp', b'', 0xA1, EUC), 'euc_jis_2004': ('euc_jis_2004', b'', 0xA1, EUC),
          'euc_jis_2004/2': ('euc_jis_2004', b'\x8f', 0xA1, EUC), 'euc_jp/0212': ('euc_jp', b'\x8f', 0xA1, EUC),
          'gb2312': ('gb2312', b'', 0xA1, EUC), 'gbk': ('gbk', b'', 0x81, GBK), 'big5': ('big5', b'', 0xA1, BIG5),
          'cp950': ('cp950', b'', 0x81, BIG5), 'big5hkscs': ('big5hkscs', b'', 0x87, BIG5),
          'euc_kr': ('euc_kr', b'', 0xA1, EUC), 'cp949': ('cp949', b'', 0x81, GBK)}
CODEC_TRIALS = {'Japan1': ['euc_jp', 'euc_jis_2004', 'euc_jis_2004/2', 'euc_jp/0212'], 'GB1': ['gb2312', 'gbk'],
                'CNS1': ['big5', 'cp950', 'big5hkscs'], 'Korea1': ['euc_kr', 'cp949']}


# ---------------------------------------------------------------- reading Adobe's files
def read(repo, path):
    """Text of a file of an adobe-type-tools repository: from its git mirror (HEAD), kept as a copy in
    ./src/<repo>/<path>, or from that copy when there is no mirror."""
    copy = os.path.join(SRC, repo, path)
    if os.path.isdir(MIRROR % repo):
        data = subprocess.run(['git', '--git-dir=' + MIRROR % repo, 'show', 'HEAD:' + path], check=True,
                              stdout=subprocess.PIPE).stdout
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        with open(copy, 'wb') as f:
            f.write(data)
    with open(copy, encoding='latin-1') as f:
        return f.read()


def exists(repo, path):
    if os.path.isdir(MIRROR % repo):
        return subprocess.run(['git', '--git-dir=' + MIRROR % repo, 'cat-file', '-e', 'HEAD:' + path],
                              stderr=subprocess.DEVNULL).returncode == 0
    return os.path.exists(os.path.join(SRC, repo, path))


def commit(repo):
    if not os.path.isdir(MIRROR % repo):
        return '?'
    return subprocess.run(['git', '--git-dir=' + MIRROR % repo, 'rev-parse', '--short', 'HEAD'],
                          stdout=subprocess.PIPE).stdout.decode().strip()


def cmap_pairs(text):
    """(code, cid) pairs of a CMap's own cidrange and cidchar blocks (usecmap not followed)."""
    out = []
    for block in re.findall(r'begincidrange(.*?)endcidrange', text, re.S):
        for a, b, c in re.findall(r'<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>\s*(\d+)', block):
            a, b, c = int(a, 16), int(b, 16), int(c)
            out += [(a + i, c + i) for i in range(b - a + 1)]
    for block in re.findall(r'begincidchar(.*?)endcidchar', text, re.S):
        out += [(int(a, 16), int(c)) for a, c in re.findall(r'<([0-9a-fA-F]+)>\s*(\d+)', block)]
    return out


def cid2code(o):
    """{cid: {column: cell}} of cid2code.txt."""
    rows, head = {}, None
    for line in read('cmap-resources', ORDERINGS[o][0] + '/cid2code.txt').splitlines():
        if line.startswith('#'):
            continue
        f = line.split('\t')
        if head is None:
            head = f
        else:
            rows[int(f[0])] = dict(zip(head[1:], f[1:]))
    return rows


def codes(cell):
    """[(code, bytes, vertical)] of a cid2code cell."""
    return [] if cell in ('*', None) else [(int(x.rstrip('v'), 16), (len(x.rstrip('v')) + 1) // 2, x.endswith('v'))
                                           for x in cell.split(',')]


def core_pairs(o):
    """{cid: {(code point, tier, vertical)}} from the Uni CMaps (tier 0: UTF-32, 1: UCS-2, 2: UCS-2-HW)."""
    d, u32, u16 = ORDERINGS[o][:3]
    pairs = collections.defaultdict(set)
    for base, names in ((0, u32), (1, u16)):
        for name in names:
            tier = base + ('HW' in name)  # UCS2-HW: ASCII codes to half-width glyphs, JIS-Roman style (5C yen)
            for hv in 'HV':
                path = '%s/CMap/%s-%s' % (d, name, hv)
                if exists('cmap-resources', path):
                    for u, cid in cmap_pairs(read('cmap-resources', path)):
                        pairs[cid].add((u, tier, hv == 'V'))
    return pairs


def gsub(o):
    """([(feature, source, target)] single substitutions, [(feature, [sources], target)] ligatures,
    [(source, [alternates])] of nalt)."""
    singles, ligatures, alternates, feature = [], [], [], None
    if not ORDERINGS[o][4]:
        return singles, ligatures, alternates
    for line in read(ORDERINGS[o][5], ORDERINGS[o][4]).splitlines():
        line = line.split('#')[0].strip()
        m = re.match(r'feature (\w+)( useExtension)? {', line)
        if m:
            feature = m.group(1)
        m = re.match(r'substitute (.*) (by|from) (.*);', line)
        if not m:
            continue
        left, kind, right = ([int(x) for x in re.findall(r'\\(\d+)', part)] for part in m.groups())
        if m.group(2) == 'from':
            alternates.append((feature, left[0], right))
        elif m.group(1).startswith('['):  # class -> glyph or class -> class
            singles += [(feature, a, b) for a, b in zip(left, right * len(left) if len(right) == 1 else right)]
        elif len(left) == 1:
            singles.append((feature, left[0], right[0]))
        else:
            ligatures.append((feature, left, right[0]))
    return singles, ligatures, alternates


def ivd(o):
    """{cid: base code point} of Adobe's registered variation sequences."""
    out = {}
    if ORDERINGS[o][5]:
        repo = ORDERINGS[o][5]
        for line in read(repo, repo + '_sequences.txt').splitlines():
            m = re.match(r'([0-9A-F]+) ([0-9A-F]+); [^;]+; CID\+(\d+)', line)
            if m:
                out.setdefault(int(m.group(3)), int(m.group(1), 16))
    return out


# ---------------------------------------------------------------- choosing text
def is_pua(u):
    return 0xE000 <= u <= 0xF8FF or u >= 0xF0000


def is_vertical_form(u):
    """Tell whether a code point is a presentation form for vertical writing (not the sesame dots,
    dashed overlines and low lines of CJK Compatibility Forms)."""
    return 0xFE10 <= u <= 0xFE19 or 0xFE30 <= u <= 0xFE44 or 0xFE47 <= u <= 0xFE48


def penalty(u):
    c = chr(u)
    if is_pua(u):
        return 90
    if is_vertical_form(u):
        return 50
    if 0x2E80 <= u <= 0x2FDF:  # CJK radicals supplement, Kangxi radicals
        return 40
    if (0xF900 <= u <= 0xFAFF or 0x2F800 <= u <= 0x2FA1F) and ud.decomposition(c):  # compatibility ideograph
        return 30
    return 20 if ud.category(c).startswith('M') else 10 if ud.category(c) == 'Lm' else 0


def decode1(code, n, codec):
    """The one character a legacy code decodes to, or None."""
    try:
        t = code.to_bytes(n, 'big').decode(codec)
    except UnicodeDecodeError:
        return None
    return t if len(t) == 1 else None


def core_text(o, pairs=None, rows=None):
    """{cid: one-character str}: the inverted Uni CMaps (the verification target)."""
    pairs = core_pairs(o) if pairs is None else pairs
    rows = cid2code(o) if rows is None else rows
    out = {}
    for cid, s in pairs.items():
        s = {x for x in s if not is_pua(x[0])}
        horizontal = [(u, t) for u, t, v in s if not v]
        vertical = [(u, t) for u, t, v in s if v]
        vertical_cid = not horizontal or any(is_vertical_form(u) for u, t in horizontal)
        candidates = vertical if vertical_cid and vertical else horizontal
        if not candidates:
            continue
        hint = {decode1(code, n, codec) for column, codec in ORDERINGS[o][3].items()
                for code, n, v in codes(rows.get(cid, {}).get(column)) if n > 1 and not v}
        out[cid] = chr(min(candidates, key=lambda ut: (ut[1], penalty(ut[0]), chr(ut[0]) not in hint, ut[0]))[0])
    return out


def text_map(o, core_only=False):
    """({cid: str}, {cid: layer}) of an ordering."""
    pairs, rows = core_pairs(o), cid2code(o)
    text = core_text(o, pairs, rows)
    layer = dict.fromkeys(text, 'core')
    if core_only:
        return text, layer

    def put(cid, t, name):
        if cid not in text and cid in rows and cid and t:
            text[cid], layer[cid] = t, name
            return True
        return False

    for cid, u in ivd(o).items():
        if not is_pua(u):
            put(cid, chr(u), 'ivd')
    for column, codec in LEGACY[o]:  # only rows (lead bytes) where the codec agrees with all core mappings
        found, bad = collections.defaultdict(list), set()
        for cid, r in rows.items():
            for code, n, v in codes(r.get(column)):
                t = decode1(code, n, codec) if n > 1 and not v else None
                if t is None or is_pua(ord(t)):
                    continue
                if cid in text and layer[cid] == 'core':
                    if ud.normalize('NFKC', t) != ud.normalize('NFKC', text[cid]) and \
                            ord(t) not in {u for u, _, _ in pairs[cid]}:
                        bad.add(code >> 8)
                    found[code >> 8].append(None)
                else:
                    found[code >> 8].append((cid, t))
        for lead, items in sorted(found.items()):
            if lead not in bad and None in items:
                for item in items:
                    if item:
                        put(item[0], item[1], 'codec')
    if o == 'Korea1':  # half-width Latin: the proportional glyph of the same byte
        same = {code: cid for cid, r in rows.items() for code, n, v in codes(r.get('KSCms-UHC')) if n == 1}
        for cid, r in rows.items():
            for code, n, v in codes(r.get('KSC-EUC')):
                if n == 1 and same.get(code) in text:
                    put(cid, text[same[code]], 'xref')
    if o == 'GB1':  # half-width pinyin, GB row 11 = GB 2312 row 8
        by_code = {code: cid for cid, r in rows.items() for code, n, v in codes(r.get('GB-EUC')) if n == 2 and not v}
        for cid, r in rows.items():
            for code, n, v in codes(r.get('GB-EUC')):
                if n == 2 and not v and code >> 8 == 0xAB and by_code.get(code - 0x300) in text:
                    put(cid, text[by_code[code - 0x300]], 'xref')
    singles, ligatures, alternates = gsub(o)

    def fill(links):  # text of related glyphs, until nothing changes; of several, a regular (NFKC-stable) one
        while True:
            found = collections.defaultdict(list)
            for a, b in links:
                if a in text and b not in text:
                    found[b].append(text[a])
            if not any([put(b, min(ts, key=lambda t: ud.normalize('NFKC', t) != t), 'gsub') for b, ts in found.items()]):
                return

    def propagate(backward=False):
        fill([(b, a) if backward else (a, b) for feature, a, b in singles if feature in SAME_TEXT])

    def mark(cid):  # a ligature's later component: its combining form if the CMaps have one
        marks = [u for u, _, _ in pairs.get(cid, ()) if ud.category(chr(u)).startswith('M')]
        return chr(min(marks)) if marks else text[cid]

    propagate()
    propagate(backward=True)
    for feature, components, b in ligatures:
        if feature in LIGATURES and all(c in text for c in components):
            put(b, text[components[0]] + ''.join(mark(c) for c in components[1:]), 'gsub')
    propagate()
    fill([(a, b) for feature, a, bs in alternates + [(f, a, [b]) for f, a, b in singles] if feature == 'nalt' for b in bs])
    propagate()
    horizontal = {b: text[a] for feature, a, b in singles if feature in ('vert', 'vrt2') and a in text}
    for cid, t in text.items():  # a vertical presentation form: its horizontal character (GSUB vert, else NFKC)
        if len(t) == 1 and is_vertical_form(ord(t)):
            h = horizontal.get(cid, '')
            text[cid], layer[cid] = h if ud.normalize('NFKC', h) == ud.normalize('NFKC', t) else ud.normalize('NFKC', t), 'vert'
    return text, layer


# ---------------------------------------------------------------- encoding
CELLS = {}


def cells(name):
    """[char or None] of a codec's cells (one character only)."""
    codec, prefix, lead, trail = CODECS[name]
    out = []
    for i in range((0xFF - lead) * len(trail)):
        try:
            t = (prefix + bytes((lead + i // len(trail), trail[i % len(trail)]))).decode(codec)
        except UnicodeDecodeError:
            t = None
        out.append(t if t and len(t) == 1 else None)
    return out


def segments(text, codecs, index=None, min_codec=3, min_copy=3):
    """Cover {cid: str} with items in CID order: ('run', cid, cp, n) consecutive code points (n == 1: 'one'),
    ('codec', cid, codec index, first cell, n) consecutive cells of a codec, ('copy', cid, source cid, n) the
    text of n earlier consecutive CIDs, ('str', cid, s) a text of several characters."""
    tables = {c: CELLS[c] if c in CELLS else CELLS.setdefault(c, cells(c)) for c in codecs}
    where = {c: collections.defaultdict(list) for c in codecs}
    for c in codecs:
        for i, ch in enumerate(tables[c]):
            if ch:
                where[c][ch].append(i)
    seen = collections.defaultdict(list)  # text -> earlier CIDs
    items, cids, k = [], sorted(text), 0

    def length(cid, same):
        n = 0
        while k + n < len(cids) and cids[k + n] == cid + n and same(n):
            n += 1
        return n

    while k < len(cids):
        cid = cids[k]
        t = text[cid]
        best = None
        for c in codecs:
            for i in where[c].get(t, ()):
                n = length(cid, lambda n: i + n < len(tables[c]) and tables[c][i + n] == text[cid + n])
                if n >= min_codec and (not best or n > best[-1]):
                    best = ('codec', cid, (index or codecs).index(c), i, n)
        for source in seen.get(t, ())[-50:] if min_copy else ():
            n = length(cid, lambda n: source + n < cid and text.get(source + n) == text[cid + n])
            if n >= min_copy and (not best or n > best[-1]):
                best = ('copy', cid, source, n)
        if len(t) > 1:
            best = best or ('str', cid, t)
        else:
            n = length(cid, lambda n: len(text[cid + n]) == 1 and ord(text[cid + n]) == ord(t) + n)
            if not best or n >= best[-1]:
                best = ('run', cid, ord(t), n) if n > 1 else ('one', cid, ord(t))
        items.append(best)
        n = 1 if best[0] in ('str', 'one') else best[-1]
        for j in range(n):
            seen[text[cid + j]].append(cid + j)
        k += n
    return items


def varint(n, out):
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def zigzag(n):
    return n * 2 if n >= 0 else -n * 2 - 1


KINDS = ('run', 'one', 'codec', 'copy', 'str', 'one+')  # one+: one code point beyond the BMP


def encode(items):
    """Bytes of the items: varints, the numbers of items and of arguments, per item (CID gap) * 8 + kind,
    the arguments of the items (run: value, n - 1; one+: value; codec: codec index, zigzag(first cell - end
    of the previous codec run), n - 1; copy: cid - source cid, n - 1; str: length, value per character), and
    per one: zigzag(code point - previous BMP code point). A value is zigzag(code point - previous code point
    of its plane) * 4 + plane: runs of the BMP and of plane 2 interleave cheaply."""
    heads, out, ones, end, prev, cell = bytearray(), bytearray(), bytearray(), 0, [0] * 4, 0

    def value(cp):
        plane = cp >> 16
        varint(zigzag(cp - prev[plane]) * 4 + plane, out)
        prev[plane] = cp

    for item in items:
        kind, cid = item[0], item[1]
        if kind == 'one' and item[2] > 0xFFFF:
            kind = 'one+'
        varint((cid - end) * 8 + KINDS.index(kind), heads)
        if kind == 'run':
            value(item[2])
            varint(item[3] - 1, out)
            prev[item[2] >> 16] += item[3] - 1
        elif kind == 'one':
            varint(zigzag(item[2] - prev[0]), ones)
            prev[0] = item[2]
        elif kind == 'one+':
            value(item[2])
        elif kind == 'codec':
            varint(item[2], out)
            varint(zigzag(item[3] - cell), out)
            varint(item[4] - 1, out)
            cell = item[3] + item[4]
        elif kind == 'copy':
            varint(cid - item[2], out)
            varint(item[3] - 1, out)
        else:
            varint(len(item[2]), out)
            for ch in item[2]:
                value(ord(ch))
        end = cid + (1 if kind in ('one', 'one+', 'str') else item[-1])
    count = bytearray()
    varint(len(items), count)
    varint(len(out) - sum(b >= 0x80 for b in out), count)  # number of varints in out
    return bytes(count + heads + out + ones)


def pack(data):
    return base64.b85encode(zlib.compress(data, 9)).decode('ascii')


DECODER = '''
def cid_text(ordering):
    """Return {CID: text} of an Adobe character collection: "Japan1", "GB1", "CNS1" or "Korea1"."""
    data, numbers, n, shift = zlib.decompress(base64.b85decode("".join(_DATA[ordering]))), [], 0, 0
    for byte in data:  # unsigned LEB128 varints
        n |= (byte & 127) << shift
        shift += 7
        if byte < 128:
            numbers.append(n)
            n = shift = 0
    heads, arguments = numbers[2:numbers[0] + 2], numbers[numbers[0] + 2:]
    text, numbers, ones, cid, last, cell = {}, iter(arguments), iter(arguments[numbers[1]:]), 0, [0] * 4, 0
    unzigzag = lambda z: z >> 1 if z & 1 == 0 else ~(z >> 1)

    def value():  # a code point: zigzag delta from the last one of its plane, times 4, plus the plane
        v = next(numbers)
        last[v & 3] += unzigzag(v >> 2)
        return last[v & 3]

    for head in heads:
        cid, kind, count = cid + (head >> 3), head & 7, 1
        if kind == 0:  # consecutive code points
            cp, count = value(), next(numbers) + 1
            text.update(zip(range(cid, cid + count), map(chr, range(cp, cp + count))))
            last[cp >> 16] += count - 1
        elif kind == 1:  # one code point of the BMP
            last[0] += unzigzag(next(ones))
            text[cid] = chr(last[0])
        elif kind == 2:  # consecutive cells of a legacy codec: prefix, lead byte (counting up), trail byte
            (codec, prefix, lead, trail), z = _CODECS[next(numbers)], next(numbers)
            cell, count = cell + unzigzag(z), next(numbers) + 1
            raw, width = [], len(trail)
            for row in range(cell // width, (cell + count - 1) // width + 1):
                byte = prefix + bytes((lead + row,))
                raw += [byte, byte.join(trail[max(cell - row * width, 0):cell + count - row * width])]
            text.update(zip(range(cid, cid + count), b"".join(raw).decode(codec)))
            cell += count
        elif kind == 3:  # the texts of earlier consecutive CIDs
            source, count = cid - next(numbers), next(numbers) + 1
            text.update((cid + i, text[source + i]) for i in range(count))
        elif kind == 4:  # several characters
            text[cid] = "".join(chr(value()) for _ in range(next(numbers)))
        else:  # one code point beyond the BMP
            text[cid] = chr(value())
        cid += count
    return text
'''


def write_tables(blobs, used, path, width=100):
    trail = {str(EUC): '_EUC', str(BIG5): '_BIG5', str(GBK): '_GBK'}
    specs = ', '.join('(%r, %r, 0x%X, %s)' % (c, p, l, trail[str(t)]) for c, p, l, t in (CODECS[u] for u in used))
    sources = ', '.join('%s %s' % (r, commit(r)) for r in ('cmap-resources', 'Adobe-Japan1', 'Adobe-GB1', 'Adobe-CNS1'))
    lines = ['"""CID -> Unicode text of the Adobe CJK character collections Japan1-7, GB1-6, CNS1-7 and Korea1-2, from',
             'Adobe\'s CMaps, variation sequences and GSUB features (written by build.py: do not edit).',
             'Sources: adobe-type-tools/' + sources + '."""',
             'import base64, zlib', '',
             '_EUC, _BIG5, _GBK = ([bytes((b,)) for r in rs for b in r] for rs in ((range(0xA1, 0xFF),),',
             '    (range(0x40, 0x7F), range(0xA1, 0xFF)), (range(0x40, 0x7F), range(0x80, 0xFF))))  # trail bytes']
    lines += textwrap.wrap('_CODECS = (%s)' % specs, 110, subsequent_indent='    ', break_on_hyphens=False)
    lines += [DECODER, '', '_DATA = {']
    for o, blob in blobs.items():
        lines.append('    %r: (' % o)
        for i in range(0, len(blob), width):
            lines.append('        "%s"' % blob[i:i + width])
        lines.append('    ),')
    lines.append('}')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def main():
    core_only = '--core' in sys.argv
    texts, best = {}, {}
    for o in ORDERINGS:
        texts[o], layer = text_map(o, core_only)
        trials = CODEC_TRIALS[o]
        for mask in range(1 << len(trials)):
            for min_codec in (2, 3):
                names = [t for i, t in enumerate(trials) if mask >> i & 1]
                size = len(pack(encode(segments(texts[o], names, None, min_codec, 2))))
                if o not in best or size < best[o][0]:
                    best[o] = (size, names, min_codec)
        print('%-7s %5d CIDs with text %s  data %6d chars (codecs %s, shortest codec run %d)' % (
            o, len(texts[o]), dict(collections.Counter(layer.values())), *best[o]))
    used = [name for name in CODECS if any(name in b[1] for b in best.values())]
    blobs = {o: pack(encode(segments(texts[o], best[o][1], used, best[o][2], 2))) for o in ORDERINGS}
    out = '/tmp/cid_tables.py'
    write_tables(blobs, used, out)
    if '--rag' in sys.argv:
        rag = sys.argv[sys.argv.index('--rag') + 1]
        with open(out) as f:
            block = f.read()
        block = 'CID_TABLES.update({' + block[block.index('_DATA = {') + len('_DATA = {'):].rstrip()[:-1] + '})\n'
        with open(rag, encoding='utf-8') as f:
            text = f.read()
        with open(rag, 'w', encoding='utf-8') as f:
            f.write(text[:text.index('CID_TABLES.update({')] + block)
    print('total data', sum(map(len, blobs.values())), 'codecs', used)


if __name__ == '__main__':
    main()
