#!/usr/bin/env bash
# make run: prepare the database, then start every built service and the
# gateway as separate processes with prefixed logs; stop them all on Ctrl-C
# or SIGTERM. Dev-only defaults are printed; production uses deploy/k8s.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/bin
STATE=$ROOT/.run
mkdir -p "$STATE"

DATABASE_URL=${DATABASE_URL:-postgres://postgres@localhost:5432/crm?sslmode=disable}
REDIS_URL=${REDIS_URL:-redis://localhost:6379/0}
export CRM_ADMIN_EMAIL=${CRM_ADMIN_EMAIL:-admin@crm.local}
export CRM_ADMIN_PASSWORD=${CRM_ADMIN_PASSWORD:-change-me-admin}
# No load balancer to take a process out of rotation: stop at once on Ctrl-C.
export CRM_SHUTDOWN_DELAY=${CRM_SHUTDOWN_DELAY:-0s}

log() { printf '\033[1m[run]\033[0m %s\n' "$*"; }
die() { log "error: $*"; exit 1; }

# Dev secrets are generated once and kept in .run/dev.env, so signing keys
# encrypted with CRM_SECRET_KEY stay readable across restarts.
if [ ! -f "$STATE/dev.env" ]; then
	{
		echo "CRM_INTERNAL_SECRET=$(head -c 32 /dev/urandom | base64 | tr -d '/+=' | head -c 40)"
		echo "CRM_SECRET_KEY=$(head -c 32 /dev/urandom | base64 | tr -d '/+=' | head -c 40)"
	} > "$STATE/dev.env"
	chmod 600 "$STATE/dev.env"
fi
set -a; . "$STATE/dev.env"; set +a
export CRM_INTERNAL_SECRET=${CRM_INTERNAL_SECRET} CRM_SECRET_KEY=${CRM_SECRET_KEY}

command -v psql >/dev/null || die "psql not found (apt-get install postgresql-client)"
psql "$DATABASE_URL" -c 'select 1' >/dev/null 2>&1 || {
	# The database may not exist yet: connect to the server's maintenance db.
	ADMIN_URL=$(echo "$DATABASE_URL" | sed -E 's#/([^/?]+)(\?|$)#/postgres\2#')
	psql "$ADMIN_URL" -c 'select 1' >/dev/null 2>&1 || die "PostgreSQL is not reachable at $DATABASE_URL"
	DBNAME=$(echo "$DATABASE_URL" | sed -E 's#^.*/([^/?]+)(\?.*)?$#\1#')
	log "creating database $DBNAME"
	psql "$ADMIN_URL" -qc "CREATE DATABASE \"$DBNAME\"" || die "cannot create database $DBNAME"
}
command -v redis-cli >/dev/null || die "redis-cli not found (apt-get install redis-tools); it checks that Redis is reachable"
redis-cli -u "$REDIS_URL" ping >/dev/null 2>&1 || die "Redis is not reachable at $REDIS_URL"

SERVICES=(identity contacts deals leads contracts intake mail webhooks)
declare -A PORT=([identity]=8081 [contacts]=8082 [leads]=8083 [deals]=8084 [contracts]=8085 [intake]=8086 [mail]=8087 [render]=8088 [webhooks]=8089 [gateway]=8080)

# Only the gateway faces the network, on ADDR (default :8080, every
# interface). Every service and the render worker's ops port listen on
# loopback: reachable from this machine only, so the gateway's limits,
# CORS and headers cannot be bypassed from the network.
GATEWAY_ADDR=${ADDR:-:8080}
unset ADDR
listen_addr() { # name
	if [ "$1" = gateway ]; then echo "$GATEWAY_ADDR"; else echo "127.0.0.1:${PORT[$1]}"; fi
}
# The address to probe a listener on: a wildcard host is probed on loopback.
probe_addr() { # name
	local a
	a=$(listen_addr "$1")
	case "$a" in
	:*) echo "127.0.0.1$a" ;;
	0.0.0.0:*) echo "127.0.0.1:${a##*:}" ;;
	\[::\]:*) echo "[::1]:${a##*:}" ;;
	*) echo "$a" ;;
	esac
}

# One schema and one login role per service; a role owns its schema and
# nothing else, so no service can read another's tables. Falls back to the
# given URL when the connecting user may not create roles.
service_url() { echo "$DATABASE_URL" | sed -E "s#://[^@/]*@#://crm_$1@#"; }
if psql "$DATABASE_URL" -tAc "select rolsuper or rolcreaterole from pg_roles where rolname = current_user" | grep -q t; then
	# The same SQL as compose's init script and the Kubernetes bootstrap Job.
	psql "$DATABASE_URL" -q -v ON_ERROR_STOP=1 -f deploy/postgres/init.sql >/dev/null
	PER_ROLE=1
	log "database ready: one schema and role per service"
else
	PER_ROLE=0
	log "connecting user cannot create roles: every service uses DATABASE_URL"
fi

PIDS=()
stop() {
	trap - INT TERM EXIT
	log "stopping ${#PIDS[@]} processes"
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	log "stopped"
}
trap stop INT TERM EXIT

export REDIS_URL
export IDENTITY_URL=http://127.0.0.1:8081 CONTACTS_URL=http://127.0.0.1:8082 LEADS_URL=http://127.0.0.1:8083
export DEALS_URL=http://127.0.0.1:8084 CONTRACTS_URL=http://127.0.0.1:8085 INTAKE_URL=http://127.0.0.1:8086
export MAIL_URL=http://127.0.0.1:8087 WEBHOOKS_URL=http://127.0.0.1:8089

start() { # name
	local name=$1 url=$DATABASE_URL
	[ -x "$BIN/$name" ] || { log "$name is not built; not starting it"; return; }
	[ "$PER_ROLE" = 1 ] && [ -n "${PORT[$name]:-}" ] && [[ " ${SERVICES[*]} " == *" $name "* ]] && url=$(service_url "$name")
	# The gateway's ops listener (metrics) stays on loopback like the services.
	local ops=()
	[ "$name" = gateway ] && ops=("OPS_ADDR=${OPS_ADDR:-127.0.0.1:9080}")
	env DATABASE_URL="$url" ADDR="$(listen_addr "$name")" "${ops[@]}" "$BIN/$name" > >(sed -u "s/^/[$name] /") 2>&1 &
	PIDS+=($!)
	STARTED+=("$name")
}

wait_ready() { # name
	local name=$1 i
	for i in $(seq 1 120); do
		curl -fsS "http://$(probe_addr "$name")/readyz" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	die "$name did not become ready on $(listen_addr "$name")"
}

STARTED=()
start identity
[[ " ${STARTED[*]} " == *" identity "* ]] && wait_ready identity
# Identity has migrated: hand its audit log to a role nobody logs in as,
# as the Kubernetes bootstrap Job does.
if [ "$PER_ROLE" = 1 ] && [[ " ${STARTED[*]} " == *" identity "* ]]; then
	psql "$DATABASE_URL" -q -v ON_ERROR_STOP=1 -f deploy/postgres/harden.sql >/dev/null && log "audit log owned by crm_audit_owner"
fi
for s in contacts deals leads contracts intake mail webhooks; do start "$s"; done
if command -v "${CHROME_PATH:-chromium}" >/dev/null 2>&1; then
	start render
else
	log "chromium not found (apt-get install chromium): PDF downloads will answer 503"
	start render
fi
start gateway
for s in "${STARTED[@]}"; do wait_ready "$s"; done

cat <<MSG

  CRM is up: http://$(probe_addr gateway)/api   (API reference: http://$(probe_addr gateway)/docs)
  Dev admin: $CRM_ADMIN_EMAIL / $CRM_ADMIN_PASSWORD   (dev only; set CRM_ADMIN_EMAIL / CRM_ADMIN_PASSWORD)

  curl -s $(probe_addr gateway)/api/auth/login -H 'Content-Type: application/json' \\
       -d '{"email":"$CRM_ADMIN_EMAIL","password":"$CRM_ADMIN_PASSWORD"}'

  Webhooks go to public https URLs only; to receive them on this machine, start with
  WEBHOOKS_ALLOW_HTTP=true WEBHOOKS_BLOCK_PRIVATE=false make run   (dev only)

  Ctrl-C stops everything.
MSG
wait -n "${PIDS[@]}" || true
log "a process exited; shutting down"
