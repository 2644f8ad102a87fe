#!/usr/bin/env bash
# `npm run test:soak`: the soak and chaos suite (test/soak/*.soak.ts) against a private
# Docker engine started here and removed afterwards. The cases stop and start that engine, so the
# files run one at a time. NODELET_SOAK_SCALE=ci (default, about 11 minutes on 2 cores) or full
# (1 GiB transfers, 1,000 sessions, 20,000 execs, 10 minutes of chaos); NODELET_SOAK_SEED replays a chaos run. Ends with a table of every case's
# figures and the line `N passed, N failed` (assertions, as scripts/test.sh counts them).
# Extra arguments go to tap, e.g. `npm run test:soak -- test/soak/bulk.soak.ts`.
set -uo pipefail
cd "$(dirname "$0")/.."
export NODELET_SOAK_SCALE=${NODELET_SOAK_SCALE:-ci}
case "$NODELET_SOAK_SCALE" in
  ci) file_timeout=900 ;;
  full) file_timeout=7200 ;;
  *) echo "NODELET_SOAK_SCALE must be ci or full" >&2; exit 2 ;;
esac
[ -f dist/cli.js ] || { echo "dist/cli.js is missing: run \`npm run build\` first" >&2; exit 1; }

state=$(mktemp -d /tmp/nodelet-soak-docker.XXXXXX)
report=$(mktemp /tmp/nodelet-soak-report.XXXXXX)
log=$(mktemp /tmp/nodelet-soak-log.XXXXXX)
# The cases' nodelet work dirs go here, so an interrupted run leaves nothing behind either.
work=$(mktemp -d /tmp/nodelet-soak-run.XXXXXX)
cleanup() {
  scripts/docker-engine.sh stop "$state"
  grep -o " $work/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$report" "$log" "$work"
}
trap cleanup EXIT
# The engine may pull only from registries on loopback (scripts/docker-engine.sh, offline_env):
# a test that names an image from elsewhere fails its pull at once, and nothing leaves the machine.
export NODELET_ENGINE_OFFLINE=1
DOCKER_HOST=$(scripts/docker-engine.sh private "$state") || exit 1
# The cases restart the engine through this directory (test/helpers/docker.ts).
export DOCKER_HOST NODELET_DOCKER_STATE_DIR=$state NODELET_SOAK_REPORT=$report NODELET_SOAK_TMPDIR=$work
scripts/docker-engine.sh images || exit 1

files=()
for a in "$@"; do case "$a" in *.soak.ts) files+=("$a") ;; esac; done
[ ${#files[@]} -gt 0 ] || set -- "$@" test/soak/*.soak.ts

started=$(date +%s)
# One file at a time (the engine is shared and restarted); no coverage (npm test measures it, and
# another run in the same tree may have left its data in .tap/: never judged here);
# --expose-gc for heap figures after a full collection.
# In its own process group, in the background with `wait`: a SIGTERM (CI's timeout) stops tap,
# the test processes and their nodelets and kubectls (tap itself forwards no signal), and the
# cleanup still runs. The output goes through tee to the terminal and the log, read below.
exec 3> >(tee "$log")
tee_pid=$!
setsid node_modules/.bin/tap --jobs=1 --disable-coverage --allow-empty-coverage --allow-incomplete-coverage --coverage-report=none --timeout="$file_timeout" --node-arg=--expose-gc "$@" >&3 2>&1 &
tap_pid=$!
trap 'kill -TERM -- "-$tap_pid" 2>/dev/null; wait "$tap_pid"; exit 143' TERM INT
wait "$tap_pid"
rc=$?
trap - TERM INT
exec 3>&-
wait "$tee_pid"
seconds=$(($(date +%s) - started))

echo
echo "soak summary (scale $NODELET_SOAK_SCALE, ${seconds} s):"
# One row per case (a top-level test of a soak file): its result and time from tap's output, its
# figures from the report the cases append to (test/helpers/soak.ts `figures`).
node -e '
const fs = require("fs");
const [report, tapLog, rc] = process.argv.slice(1);
const tap = fs.readFileSync(tapLog, "utf8");
const figs = fs.readFileSync(report, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const rows = [];
let file = "";
for (const line of tap.split("\n")) {
  const sub = /^# Subtest: test\/soak\/(.*)\.soak\.ts$/.exec(line);
  if (sub) file = sub[1];
  const res = /^    (not )?ok \d+ - (.*?)(?: # time=([\d.]+)ms)?$/.exec(line);
  if (res && file) rows.push({ file, name: res[2], ok: !res[1], s: res[3] ? (Number(res[3]) / 1000).toFixed(1) : "" });
}
const cell = (f) => Object.entries(f).map(([k, v]) => `${k}=${v}`).join(" ");
const w = Math.max(4, ...rows.map((r) => `${r.file}: ${r.name}`.length));
console.log(`${"case".padEnd(w)}  result  seconds  figures`);
for (const r of rows) {
  const mine = figs.filter((f) => f.file === r.file && f.case === r.name);
  const first = `${`${r.file}: ${r.name}`.padEnd(w)}  ${(r.ok ? "ok" : "FAILED").padEnd(6)}  ${r.s.padStart(7)}  `;
  if (mine.length === 0) console.log(first + "-");
  mine.forEach((f, i) => console.log((i === 0 ? first : " ".repeat(first.length)) + cell(f.figures)));
}
if (rows.length === 0) console.log("(no cases ran)");
// The count as scripts/test.sh gives it, from the tap summary line `# { total: N, pass: N, fail: N, … }` line:
// assertions passed, and the rest (a non-zero exit with nothing failed counts as one failure).
const last = tap.split("\n").filter((l) => l.startsWith("# { total: ")).pop() ?? "";
const n = (k) => Number(new RegExp(`${k}: (\\d+)`).exec(last)?.[1] ?? 0);
let failed = n("total") - n("pass") - n("skip") - n("todo");
if (Number(rc) !== 0 && failed === 0) failed = 1;
console.log(`${n("pass")} passed, ${failed} failed`);
' "$report" "$log" "$rc" || echo "0 passed, 1 failed"

exit "$rc"
