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
pkg/listq:FuzzParse
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

cache=$(go env GOCACHE)/fuzz
for t in $TARGETS; do
	dir=${t%%:*} name=${t##*:}
	echo "== $dir $name ($FUZZTIME)"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "./$dir"
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
