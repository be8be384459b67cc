#!/usr/bin/env bash
# The Warden test command (the README's): installs e2e/node's npm packages when
# they are missing or differ from package-lock.json, then vets and tests every
# Go package with the race detector, and (for the whole suite) runs each fuzz
# target for a few seconds.
#
#   .ci/test.sh                      # everything
#   .ci/test.sh ./internal/testing/fixture/  # only these packages (vet and test)
set -euo pipefail
cd "$(dirname "$0")/.."

# node_modules_current succeeds when e2e/node/node_modules holds exactly what
# package-lock.json pins (npm's own record, node_modules/.package-lock.json) and
# the lock matches package.json's dependencies.
node_modules_current() {
	[ -f e2e/node/node_modules/.package-lock.json ] || return 1
	node -e '
		const fs = require("fs");
		const read = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
		const pkg = read("e2e/node/package.json");
		const lock = read("e2e/node/package-lock.json");
		const have = read("e2e/node/node_modules/.package-lock.json").packages || {};
		const want = lock.packages || {};
		const same = (a, b) => JSON.stringify(a || {}) === JSON.stringify(b || {});
		if (!same((want[""] || {}).dependencies, pkg.dependencies)) process.exit(1);
		for (const [path, p] of Object.entries(want)) {
			if (path === "") continue;
			const h = have[path];
			if (!h && p.optional) continue; // not for this platform
			if (!h || h.version !== p.version) process.exit(1);
			if (p.integrity && h.integrity && h.integrity !== p.integrity) process.exit(1);
			if (!fs.existsSync("e2e/node/" + path + "/package.json")) process.exit(1);
		}
	'
}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "test.sh: node and npm are needed to install e2e/node (any Node with npm; the tests bring their own Node 22)" >&2
	exit 1
fi
if ! node_modules_current; then
	echo "== e2e/node: node_modules missing or stale; npm ci"
	(cd e2e/node && npm ci --no-audit --no-fund)
fi

if [ "$#" -gt 0 ]; then
	pkgs=("$@")
else
	pkgs=(./...)
fi

echo "== go vet ${pkgs[*]}"
go vet "${pkgs[@]}"

echo "== go test -race -count=1 -timeout 40m ${pkgs[*]}"
# On a failure the summary is printed again last, where a reader of only the
# tail of a long log sees it: the failed tests, and after a timeout the tests
# that were running (Go prints them first, before every goroutine's stack).
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! go test -race -count=1 -timeout 40m "${pkgs[@]}" 2>&1 | tee "$log"; then
	echo "== test.sh: the tests failed; what failed:"
	grep -E -A12 '^(--- FAIL|FAIL|panic:|running tests:)' "$log" | grep -v -E '^\s+/|^goroutine |^\S+\(|^$' | head -120
	exit 1
fi

if [ "$#" -gt 0 ]; then
	exit 0
fi

# A short run of each fuzz target, one at a time (-fuzz takes one target per
# run). Its seed corpus (testdata/fuzz/) already ran above; this looks a little
# further. A failing input is written to that testdata/fuzz/ folder: commit it
# with the fix. Budgets are counts of inputs, a few seconds each here: a
# duration (-fuzztime 4s) trips a race in Go's fuzz coordinator that fails the
# run with "context deadline exceeded" and no input (go.dev/issue/75804, fixed
# in Go 1.27). WARDEN_FUZZSCALE multiplies every count.
scale="${WARDEN_FUZZSCALE:-1}"
for target in ./config/:FuzzParse:20000 ./config/:FuzzParseCodex:10000 ./upstream/:FuzzCallAnswer:20000 \
	./upstream/:FuzzCallAnswerAfterNoise:20000 ./upstream/:FuzzWireResponse:60 \
	./surface/:FuzzMCPRequest:8000 ./surface/:FuzzStatelessCall:20000 ./api/:FuzzBodies:4000 \
	./callers/:FuzzAuthenticate:20000 ./callers/:FuzzOIDCToken:8000 ./guardrails/:FuzzFindSecrets:20000; do
	IFS=: read -r pkg name count <<<"$target"
	fuzztime="$((count * scale))x"
	echo "== go test -fuzz ^${name}\$ -fuzztime ${fuzztime} ${pkg}"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "${fuzztime}" "${pkg}"
done
