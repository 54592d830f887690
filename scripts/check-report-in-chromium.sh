#!/usr/bin/env bash
# Opens oscost's HTML report in headless Chromium, as a reader's browser would, and fails when
# the page did not load, when the browser said anything on its console (the page runs no
# script, so every console line is the browser's own complaint: a content-security-policy
# violation, a blocked or failed load), or when the screenshot is blank.
#
# The detector is tried first on pages made to fail (a blocked image and a console error; an
# empty page), so a check that cannot fail is caught too.
#
# Usage: scripts/check-report-in-chromium.sh
#   OSCOST=path/to/oscost   the binary to make the pages with (default: a release build)
#   CHROMIUM=path           the browser (default: chromium on the PATH)
#   KEEP=dir                keep the pages and screenshots there
set -euo pipefail
cd "$(dirname "$0")/.."

chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [[ -z "$chromium" ]]; then
  echo "check-report: chromium is not installed (apt-get install chromium)" >&2
  exit 1
fi
if [[ -z "${OSCOST:-}" ]]; then
  cargo build --release --locked -q
  OSCOST=target/release/oscost
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
keep=${KEEP:-$work}
mkdir -p "$keep"

# load PAGE PNG LOG: one headless load, its screenshot and everything the browser logged.
load() {
  local status=0
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --enable-logging=stderr --v=0 --user-data-dir="$work/profile" \
    --screenshot="$2" --window-size=1280,4000 "file://$(realpath "$1")" \
    >"$3.stdout" 2>"$3" || status=$?
  if ((status != 0)); then
    echo "chromium exited with status $status" >>"$3"
  fi
  if [[ ! -s "$2" ]]; then
    echo "no screenshot was written" >>"$3"
  fi
}

# problems LOG: the lines of the log that say the page is broken.
problems() {
  grep -E ':CONSOLE|Page load failed|net::ERR_|Content Security Policy|chromium exited|no screenshot' "$1" || true
}

# blank PNG: prints why the screenshot is blank (nothing when it is not). Decodes the PNG with
# the standard library only: 8-bit RGB or RGBA, not interlaced, as Chromium writes them.
blank() {
  python3 - "$1" <<'EOF'
import struct, sys, zlib

def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("not a PNG file")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                sys.exit(f"unexpected PNG format (depth {depth}, colour type {ctype})")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw, stride = zlib.decompress(idat), w * bpp
    prev, i, rows = bytearray(stride), 0, []
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((a + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows

w, h, bpp, rows = pixels(sys.argv[1])
colours, ink = set(), 0
for r in rows[::4]:
    for x in range(0, len(r), bpp * 2):
        px = r[x:x + 3]
        colours.add(px)
        ink += px != b"\xff\xff\xff"
sampled = len(rows[::4]) * ((w + 1) // 2)
if len(colours) < 16 or ink < sampled * 0.01:
    print(f"{len(colours)} colours, {100 * ink / sampled:.2f} % of the pixels not white")
EOF
}

# figures PAGE: how many figures the page's source holds, and how many the browser's DOM holds.
figures() {
  local in_dom
  in_dom=$(timeout 120 "$chromium" --headless --no-sandbox --disable-gpu \
    --user-data-dir="$work/profile" --dump-dom "file://$(realpath "$1")" 2>/dev/null |
    grep -o '<svg ' | wc -l)
  echo "$(grep -o '<svg ' "$1" | wc -l) $in_dom"
}

failed=0

echo "== the detector on pages made to fail"
cat >"$work/broken.html" <<'EOF'
<!DOCTYPE html>
<html><head>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"/>
</head><body><h1>broken on purpose</h1>
<img src="missing.png" alt="missing"/>
<script>console.error("deliberate console error");</script>
</body></html>
EOF
load "$work/broken.html" "$work/broken.png" "$work/broken.log"
found=$(problems "$work/broken.log")
if ! grep -q 'missing.png' <<<"$found" || ! grep -q 'deliberate console error' <<<"$found"; then
  echo "check-report: the detector missed the broken page's problems; it logged:" >&2
  cat "$work/broken.log" >&2
  exit 1
fi
echo "broken page: $(wc -l <<<"$found") problems seen, as it should"
printf '<!DOCTYPE html>\n<html><head><title>empty</title></head><body></body></html>\n' >"$work/empty.html"
load "$work/empty.html" "$work/empty.png" "$work/empty.log"
why=$(blank "$work/empty.png")
if [[ -z "$why" ]]; then
  echo "check-report: the blank-page detector did not see that an empty page is blank" >&2
  exit 1
fi
echo "empty page: blank ($why), as it should"

echo "== oscost's reports"
cp tests/golden/oscost-2.json "$work/first.json"
cp tests/golden/oscost-2.json "$work/second.json"
"$OSCOST" report crates/report/tests/fixtures/suite.json -o "$keep/suite.html"
"$OSCOST" report "$work/first.json" "$work/second.json" -o "$keep/two-runs.html"
"$OSCOST" --scripted --quiet --no-save run example example-more --report "$keep/scripted.html" >/dev/null
for page in suite two-runs scripted; do
  html="$keep/$page.html"
  png="$keep/$page.png"
  log="$keep/$page.log"
  load "$html" "$png" "$log"
  found=$(problems "$log")
  if [[ -n "$found" ]]; then
    echo "FAILED $page.html: the browser complained:" >&2
    echo "$found" >&2
    failed=1
    continue
  fi
  why=$(blank "$png")
  if [[ -n "$why" ]]; then
    echo "FAILED $page.html: the screenshot is blank ($why)" >&2
    failed=1
    continue
  fi
  read -r in_source in_dom <<<"$(figures "$html")"
  if ((in_source == 0 || in_source != in_dom)); then
    echo "FAILED $page.html: $in_source figures in the page, $in_dom in the browser's DOM" >&2
    failed=1
    continue
  fi
  echo "$page.html: loaded, no console message, $in_dom figures drawn, screenshot not blank"
done
if ((failed)); then
  exit 1
fi
echo "report check: every page loads cleanly in $("$chromium" --version 2>/dev/null | head -n1)"
