#!/usr/bin/env bash
# Measures cairn's transcript store on generated Claude Code sessions
# (bench/gen) of 1, 10 and 100 MB: resuming each (Load + Messages, every
# run in a fresh process, median of RUNS) and durable user appends, and
# prints a table against the targets. Files go to bench/out/ (ignored by
# git).
#
#   bench/run.sh [RUNS]     RUNS resumes per file, default 3
#   CLAUDE=/opt/ccoracle/node_modules/.bin/claude bench/run.sh   also times
#                           Claude Code beside cairn on the no-compaction files
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"

runs=${1:-3}
out=bench/out
bin=$out/cairn-bench
mkdir -p "$out"
go build -o "$bin" ./bench/cmd/cairn-bench

echo "== generate"
for mb in 1 10 100; do
  "$bin" gen -size "${mb}MB" -compact -out "$out/session-${mb}MB.jsonl"
done
# No compaction (the default): the whole file is the conversation. Its
# responses record the usage a 200K window allows, as a real session's
# do: the resume must weigh the content to know it is over the window.
for mb in 1 10 100 400; do
  "$bin" gen -size "${mb}MB" -window 200000 -out "$out/flat-${mb}MB.jsonl"
done
"$bin" gen -size 100MB -damage -out "$out/damaged-100MB.jsonl"

# resume FILE prints the median run (by wall time) of RUNS fresh-process
# resumes: size, read, entries, messages, warnings, seconds, peak RSS bytes,
# CPU seconds.
resume() {
  for _ in $(seq "$runs"); do "$bin" resume -tsv "$1"; done |
    sort -t $'\t' -k6,6g | sed -n "$(((runs + 1) / 2))p"
}

echo
echo "== resume (Load + Messages, median of $runs fresh processes)"
echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3), load average$(uptime | sed 's/.*load average//')"
fmt='%-22s %9s %9s %8s %9s %9s %9s %10s  %s\n'
# shellcheck disable=SC2059
printf "$fmt" file size read entries messages wall CPU "peak RSS" "target (Claude Code)"
for mb in 1 10 100; do
  for kind in session flat; do
    f=$out/$kind-${mb}MB.jsonl
    IFS=$'\t' read -r size read entries msgs _ secs rss cpu < <(resume "$f")
    note=""
    case "$kind-$mb" in
    session-100)
      note=$(awk -v s="$secs" -v r="$rss" 'BEGIN {
        ok = (s <= 0.25 && r <= 150 * 1048576) ? "met" : "MISSED"
        printf "<= 0.25 s, <= 150 MB: %s (3.2 s, 729 MB)", ok }') ;;
    session-10) note="(0.70 s, 306 MB)" ;;
    flat-*) note="no compaction: the whole file is the conversation" ;;
    esac
    # shellcheck disable=SC2059
    printf "$fmt" "$(basename "$f")" \
      "$(awk -v b="$size" 'BEGIN { printf "%.1f MB", b / 1048576 }')" \
      "$(awk -v b="$read" 'BEGIN { printf "%.1f MB", b / 1048576 }')" \
      "$entries" "$msgs" \
      "$(awk -v s="$secs" 'BEGIN { printf "%.3f s", s }')" \
      "$(awk -v s="$cpu" 'BEGIN { printf "%.3f s", s }')" \
      "$(awk -v b="$rss" 'BEGIN { printf "%.1f MB", b / 1048576 }')" \
      "$note"
  done
done

echo
echo "== durable user append (Writer.AppendDurable on a FileStore, fsync each)"
rm -rf "$out/append"
IFS=$'\t' read -r n p50 p90 p99 max total base50 base99 < <("$bin" append -tsv -n 10000 "$out/append")
rm -rf "$out/append"
awk -v n="$n" -v p50="$p50" -v p90="$p90" -v p99="$p99" -v max="$max" -v total="$total" -v b50="$base50" -v b99="$base99" 'BEGIN {
  printf "%d appends in %.2f s: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms\n", n, total / 1e9, p50 / 1e6, p90 / 1e6, p99 / 1e6, max / 1e6
  printf "the disk alone (write + fsync, no Writer): p50 %.3f ms, p99 %.3f ms\n", b50 / 1e6, b99 / 1e6
  printf "target p99 <= 1 ms: %s\n", (p99 <= 1e6 ? "met" : "MISSED")
}'

echo
echo "== the cairn binary: start to first model request (fake server on loopback, median of 5)"
go build -o "$out/cairn" ./cmd/cairn
"$bin" firstreq -cairn "$out/cairn" -n 5
echo "  target <= 50 ms (Claude Code: 0.39 s)"
"$bin" firstreq -cairn "$out/cairn" -n 5 -resume "$out/session-100MB.jsonl"
echo "  target <= 0.3 s, <= 150 MB (Claude Code: 3.2 s, 729 MB)"

echo
echo "== no compaction: cairn -p --resume ID hi to its first request, beside Claude Code when CLAUDE names its binary (alternating runs, medians of 3)"
for mb in 10 100; do
  args=(-cairn "$out/cairn" -n 3 -resume "$out/flat-${mb}MB.jsonl" -second)
  if [ -x "${CLAUDE:-}" ]; then args+=(-claude "$CLAUDE"); fi
  "$bin" firstreq "${args[@]}"
done
echo "  target at 100 MB: <= 0.25 s, <= 150 MB, <= 0.15x Claude Code's time and <= 0.25x its peak RSS; 10 MB: <= 0.05 s; a second turn adds only its delta"
"$bin" firstreq -cairn "$out/cairn" -n 3 -resume "$out/flat-400MB.jsonl"
echo "  target at 400 MB: <= 300 MB peak RSS"
"$bin" firstreq -cairn "$out/cairn" -n 3 -resume "$out/damaged-100MB.jsonl"
"$bin" resume "$out/damaged-100MB.jsonl" | grep -E 'entries|warning'
echo "  damaged (garbage line, 20 MB line, torn last line): the same budget, one warning per bad line"
