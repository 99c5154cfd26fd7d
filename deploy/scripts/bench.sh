#!/usr/bin/env bash
# make bench: the platform's benchmarks (docs/benchmarks.md). Results are
# appended as Markdown to .run/bench-<timestamp>.md and printed.
#   CRM_BENCH_ROWS  rows seeded for the list benchmarks (default 1,000,000)
#   BENCH           go test -bench pattern for the gateway suite (default .)
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .run
out=$PWD/.run/bench-$(date -u +%Y%m%dT%H%M%SZ).md
export CRM_BENCH_OUT=$out
{
	echo "# Benchmark run $(date -u +%FT%TZ)"
	echo
	echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out"

# measured runs a step and fails it when no benchmark result line came
# out (a -bench pattern that matches nothing passes silently otherwise).
measured() {
	local name=$1 log
	shift
	log=$(mktemp)
	"$@" | tee "$log"
	if ! grep -Eq '^Benchmark[^ ]+[[:space:]]+[0-9]+' "$log"; then
		echo "bench: step \"$name\" measured nothing" | tee -a "$out" >&2
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
}

echo "== gateway suite (deploy/e2e): contacts list/export/import at ${CRM_BENCH_ROWS:-1000000} rows, leads, qualification, intake, PDF, webhooks" | tee -a "$out"
measured "gateway suite" go test -run '^$' -bench "${BENCH:-.}" -benchtime 1x -timeout 90m ./deploy/e2e/ | tee -a "$out.log"

echo "== contacts list/export (services/contacts, service level; the import against raw COPY is BenchmarkImport, see docs/benchmarks.md)" | tee -a "$out"
measured "contacts" bash -c "cd services/contacts && CRM_BENCH_ROWS=${CRM_BENCH_ROWS:-1000000} go test -tags bench -run '^\$' -bench '^BenchmarkContacts\$' -benchtime 1x -timeout 60m ./internal/api/" | tee -a "$out"

echo "== render worker (services/render): PDF vs bare chromedp, cached download, DOCX" | tee -a "$out"
measured "render" make -s -C services/render bench | tee -a "$out"

echo "results: $out"
