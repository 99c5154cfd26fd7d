#!/usr/bin/env bash
# make fuzz: runs every native Go fuzz target for FUZZTIME each (Go fuzzes
# one target per invocation). A crash stops the run and leaves the failing
# input under the package's testdata/fuzz/<Target>/, where plain `go test`
# replays it: commit it with the fix. With FUZZ_SAVE=1 the inputs the fuzzer
# found interesting (up to FUZZ_KEEP per target, smallest first) are copied
# from the Go cache into testdata/fuzz/<Target>/ as the committed corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."

FUZZTIME=${FUZZTIME:-2m}
FUZZ_KEEP=${FUZZ_KEEP:-40}
# package-directory:Target, one per line.
TARGETS="
pkg/csvx:FuzzReader
pkg/csvx:FuzzWriterRoundTrip
pkg/csvx:FuzzOpen
pkg/list/listparam:FuzzParse
pkg/httpx:FuzzDecode
gateway/internal/gateway:FuzzMatch
services/contacts/internal/api:FuzzWriteBodies
services/contacts/internal/api:FuzzImportUpload
services/leads/internal/api:FuzzWriteBodies
services/deals/internal/api:FuzzWriteBodies
services/identity/internal/api:FuzzWriteBodies
services/contracts/internal/api:FuzzWriteBodies
services/contracts/internal/api:FuzzSignedCopyUpload
services/intake/internal/api:FuzzSubmit
services/mail/internal/api:FuzzWriteBodies
services/webhooks/internal/api:FuzzWriteBodies
pkg/netguard:FuzzCheckURL
services/contracts/internal/contracts:FuzzResolve
services/contracts/internal/contracts:FuzzResolveTemplate
services/contracts/internal/contracts:FuzzSanitizer
services/contracts/internal/contracts:FuzzParseablePDF
services/render/internal/htmldoc:FuzzSanitize
services/render/internal/docx:FuzzRender
services/mail/internal/imapsync:FuzzParse
"
if [[ -n "${FUZZ_ONLY:-}" ]]; then
	TARGETS=$(grep -E -- "${FUZZ_ONLY}" <<<"$TARGETS" || true)
fi

# A fuzz worker stopped in the middle of an input (at the end of FUZZTIME,
# or when the fuzzer restarts it) cannot run its clean-up, so the test
# database it cloned (pkg/testdb) stays behind. After each target, the
# crmtest_* databases its run created are dropped; DROP DATABASE without
# FORCE refuses one still in use, so another test's database is never
# taken. Without psql nothing is dropped.
DB_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
test_dbs() {
	command -v psql >/dev/null || return 0
	psql "$DB_URL" -Atc "SELECT datname FROM pg_database WHERE datname LIKE 'crmtest\_%'" 2>/dev/null | LC_ALL=C sort || true
}

cache=$(go env GOCACHE)/fuzz
for t in $TARGETS; do
	dir=${t%%:*} name=${t##*:}
	echo "== $dir $name ($FUZZTIME)"
	before=$(test_dbs)
	status=0
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "./$dir" || status=$?
	for db in $(LC_ALL=C comm -13 <(echo "$before") <(test_dbs)); do
		psql "$DB_URL" -qAtc "DROP DATABASE \"$db\"" 2>/dev/null || true
	done
	if [[ $status != 0 ]]; then
		exit "$status"
	fi
	if [[ "${FUZZ_SAVE:-}" == 1 ]]; then
		pkg=$(cd "$dir" && go list .)
		src="$cache/$pkg/$name"
		dst="$dir/testdata/fuzz/$name"
		if [[ -d "$src" ]]; then
			mkdir -p "$dst"
			# Smallest first: small inputs replay fast in every go test.
			ls -S -r "$src" | head -n "$FUZZ_KEEP" | while read -r f; do cp "$src/$f" "$dst/$f"; done
		fi
	fi
done
