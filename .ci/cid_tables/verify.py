#!/usr/bin/env python3
"""Verify rag.py's cid_text against Adobe's CMaps (a parser of its own) and build.text_map; time it.

Checks per ordering:
  1. every CID that Adobe's Uni CMaps (UTF-32 and UCS-2, -H and -V) map a non-PUA code point to has text, and
     that text is one of those code points (except vertical-form CIDs given their horizontal character via
     GSUB vert, listed);
  2. where the UTF-32 -H CMaps give a CID exactly one code point (and no -V mapping), the text is it;
  3. cid_text(o) == build.text_map(o) exactly (all layers), and no other CID has text.
Usage: python3 .ci/cid_tables/verify.py [--time]   (--time: only time first calls, in fresh processes)
"""
import os, re, subprocess, sys, time, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]  # build.py, and rag.py
GIT = os.environ.get('ADOBE_MIRRORS', '/work/.mirror') + '/adobe-type-tools+cmap-resources/repo'
CMAPS = {'Japan1': ('Adobe-Japan1-7', ['UniJIS-UTF32', 'UniJIS2004-UTF32', 'UniJISX0213-UTF32', 'UniJISX02132004-UTF32',
                                       'UniJIS-UCS2', 'UniJIS-UCS2-HW', 'UniJISPro-UCS2', 'UniJISPro-UCS2-HW']),
         'GB1': ('Adobe-GB1-6', ['UniGB-UTF32', 'UniGB-UCS2']), 'CNS1': ('Adobe-CNS1-7', ['UniCNS-UTF32', 'UniCNS-UCS2']),
         'Korea1': ('Adobe-Korea1-2', ['UniKS-UTF32', 'UniKS-UCS2'])}


def show(path):
    r = subprocess.run(['git', '--git-dir=' + GIT, 'show', 'HEAD:' + path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return r.stdout.decode('latin-1') if r.returncode == 0 else None


def inverted(o):
    """{cid: {code point: set of 'H'/'V' and CMap names}} of Adobe's Uni CMaps."""
    d, names = CMAPS[o]
    out = {}
    for name in names:
        for wm in 'HV':
            text = show('%s/CMap/%s-%s' % (d, name, wm))
            if text is None:
                continue
            for kind, body in re.findall(r'begincid(range|char)(.*?)endcid\1', text, re.S):
                for m in re.finditer(r'<(\w+)>\s*(?:<(\w+)>\s*)?(\d+)', body):
                    lo = int(m.group(1), 16)
                    hi = int(m.group(2), 16) if m.group(2) else lo
                    for u in range(lo, hi + 1):
                        out.setdefault(int(m.group(3)) + u - lo, {}).setdefault(u, set()).update((wm, name))
    return out


def pua(u):
    return 0xE000 <= u <= 0xF8FF or u >= 0xF0000


def time_first_calls():
    code = 'import time, rag; t = time.perf_counter(); d = rag.cid_text(%r); print("%%.1f" %% ((time.perf_counter() - t) * 1000))'
    for o in CMAPS:
        runs = [float(subprocess.run([sys.executable, '-c', code % o], cwd=os.path.dirname(os.path.dirname(HERE)), stdout=subprocess.PIPE).stdout) for _ in range(5)]
        print('  %-7s first call %s ms (median of 5 fresh processes: %.1f)' % (o, ' '.join('%.1f' % r for r in runs), sorted(runs)[2]))


def main():
    print(sys.version.split()[0])
    if '--time' in sys.argv:
        return time_first_calls()
    import build
    import rag
    ok = True
    for o in CMAPS:
        got = rag.cid_text(o)
        adobe = inverted(o)
        want, layer = build.text_map(o)
        mapped = {cid: {u for u in us if not pua(u)} for cid, us in adobe.items()}
        mapped = {cid: us for cid, us in mapped.items() if us}
        missing = [cid for cid in mapped if cid not in got]
        vert = {cid for cid in mapped if layer.get(cid) == 'vert'}
        wrong = [cid for cid in mapped if cid in got and (len(got[cid]) != 1 or ord(got[cid]) not in mapped[cid]) and not
                 (cid in vert and any(unicodedata.normalize('NFKC', chr(u)) == unicodedata.normalize('NFKC', got[cid])
                                      for u in mapped[cid]))]
        single = [cid for cid, us in adobe.items() if len(us) == 1 and not pua(next(iter(us))) and
                  all('H' in s and 'UTF32' in ''.join(s) for s in us.values())]
        single_bad = [cid for cid in single if cid not in vert and got.get(cid) != chr(next(iter(adobe[cid])))]
        exact = got == want
        extra = [cid for cid in got if cid not in mapped]
        ok &= not missing and not wrong and not single_bad and exact
        print('%-7s Adobe-mapped CIDs %d: present %d, text one of Adobe\'s code points %d, vertical form -> horizontal '
              '(NFKC-equal) %s; wrong %d; CIDs with a single Adobe mapping %d, differing %d; text beyond Adobe\'s '
              'CMaps %d; cid_text == build.text_map: %s' % (
                  o, len(mapped), len(mapped) - len(missing), len(mapped) - len(missing) - len(wrong) - len(vert),
                  ' '.join('%d:%s' % (cid, got[cid]) for cid in sorted(vert)), len(wrong), len(single), len(single_bad),
                  len(extra), exact))
    print('ALL OK' if ok else 'FAILED')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
