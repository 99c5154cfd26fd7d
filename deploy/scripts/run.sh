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

# REPLICAS=N (N > 1) runs N of every service, worker and the gateway on
# loopback ports of their own behind a local HAProxy that answers on the
# usual ports (the gateway still on ADDR), health-checking /readyz each
# second: a dead replica is out within 2 s. Unset or 1: one of each.
REPLICAS=${REPLICAS:-1}
[[ "$REPLICAS" =~ ^[1-9][0-9]?$ ]] || die "REPLICAS must be a number from 1 to 99, not '$REPLICAS'"
if [ "$REPLICAS" -gt 1 ]; then
	command -v haproxy >/dev/null || die "haproxy not found (apt-get install haproxy); REPLICAS=$REPLICAS needs it"
	[ "$REPLICAS" -le 5 ] || die "REPLICAS is at most 5 (replica ports are the usual port + 100*i)"
fi
replica_port() { echo $((PORT[$1] + 100 * $2)); } # name replica

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
	if [ "$REPLICAS" -gt 1 ]; then
		# Replica i listens on 127.0.0.1:(usual port + 100*i); HAProxy
		# answers on the usual port in front of them. Its health checks'
		# successful /readyz requests are left out of the logs.
		local i
		for i in $(seq 1 "$REPLICAS"); do
			env DATABASE_URL="$url" ADDR="127.0.0.1:$(replica_port "$name" "$i")" \
				OPS_ADDR="127.0.0.1:$((9080 + 100 * i))" \
				"$BIN/$name" > >(sed -u -e '/"route":"\/readyz","status":200,/d' -e "s/^/[$name.$i] /") 2>&1 &
			PIDS+=($!)
		done
		STARTED+=("$name")
		return
	fi
	# The gateway's ops listener (metrics) stays on loopback like the services.
	local ops=()
	[ "$name" = gateway ] && ops=("OPS_ADDR=${OPS_ADDR:-127.0.0.1:9080}")
	env DATABASE_URL="$url" ADDR="$(listen_addr "$name")" "${ops[@]}" "$BIN/$name" > >(sed -u "s/^/[$name] /") 2>&1 &
	PIDS+=($!)
	STARTED+=("$name")
}

wait_ready() { # name
	local name=$1 i r addrs=()
	if [ "$REPLICAS" -gt 1 ]; then
		for r in $(seq 1 "$REPLICAS"); do addrs+=("127.0.0.1:$(replica_port "$name" "$r")"); done
	else
		addrs=("$(probe_addr "$name")")
	fi
	for a in "${addrs[@]}"; do
		for i in $(seq 1 121); do
			[ "$i" = 121 ] && die "$name did not become ready on $a"
			curl -fsS "http://$a/readyz" >/dev/null 2>&1 && break
			sleep 0.5
		done
	done
}

# The HAProxy configuration for REPLICAS > 1: one frontend per started
# process on its usual address, its replicas as the backend's servers,
# checked on /readyz every second (out after 2 failures, back after 2
# successes). A request is re-sent to the other replica only when the
# connection could not be made, so no write is ever sent twice.
write_haproxy_cfg() {
	local s r
	cat <<CFG
# Generated by deploy/scripts/run.sh (REPLICAS=$REPLICAS); rewritten at each start.
global
	maxconn 4096
defaults
	mode http
	option redispatch
	retries 3
	timeout connect 2s
	timeout client 5m
	timeout server 5m
	timeout tunnel 1h
	timeout http-request 30s
	timeout http-keep-alive 30s
CFG
	for s in "${FRONTED[@]}"; do
		printf '\nfrontend %s\n\tbind %s\n' "$s" "$(listen_addr "$s")"
		# The gateway trusts loopback proxies (CRM_TRUSTED_PROXIES): it
		# limits and logs by the client's address from X-Forwarded-For.
		[ "$s" = gateway ] && printf '\toption forwardfor\n'
		printf '\tdefault_backend %s_replicas\nbackend %s_replicas\n\tbalance roundrobin\n' "$s" "$s"
		printf '\toption httpchk GET /readyz\n\thttp-check expect status 200\n'
		for r in $(seq 1 "$REPLICAS"); do
			printf '\tserver %s%d 127.0.0.1:%d check inter 1s fall 2 rise 2\n' "$s" "$r" "$(replica_port "$s" "$r")"
		done
	done
}

# With replicas, HAProxy starts first: the processes reach each other
# (identity's JWKS, the internal APIs) through it while they start.
if [ "$REPLICAS" -gt 1 ]; then
	FRONTED=()
	for s in identity contacts deals leads contracts intake mail webhooks render gateway; do
		[ -x "$BIN/$s" ] && FRONTED+=("$s")
	done
	HAPROXY_CFG=$STATE/haproxy.cfg
	write_haproxy_cfg > "$HAPROXY_CFG"
	haproxy -c -q -f "$HAPROXY_CFG" || die "invalid $HAPROXY_CFG"
	# In the foreground (-db) as a child of this script: Ctrl-C stops it too.
	haproxy -db -f "$HAPROXY_CFG" > >(sed -u "s/^/[haproxy] /") 2>&1 &
	PIDS+=($!)
	HAPROXY_PID=$!
fi

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
if [ "$REPLICAS" -gt 1 ]; then
	for s in "${STARTED[@]}"; do
		for i in $(seq 1 61); do
			[ "$i" = 61 ] && die "HAProxy does not answer for $s on $(probe_addr "$s")"
			curl -fsS "http://$(probe_addr "$s")/readyz" >/dev/null 2>&1 && break
			sleep 0.5
		done
	done
	log "HAProxy ($HAPROXY_CFG) in front of $REPLICAS replicas of: ${STARTED[*]}"
fi

cat <<MSG

  CRM is up: http://$(probe_addr gateway)/api   (API reference: http://$(probe_addr gateway)/docs)
  Dev admin: $CRM_ADMIN_EMAIL / $CRM_ADMIN_PASSWORD   (dev only; set CRM_ADMIN_EMAIL / CRM_ADMIN_PASSWORD)

  curl -s $(probe_addr gateway)/api/auth/login -H 'Content-Type: application/json' \\
       -d '{"email":"$CRM_ADMIN_EMAIL","password":"$CRM_ADMIN_PASSWORD"}'

  Webhooks go to public https URLs only; to receive them on this machine, start with
  WEBHOOKS_ALLOW_HTTP=true WEBHOOKS_BLOCK_PRIVATE=false make run   (dev only)

  Ctrl-C stops everything.
MSG
if [ "$REPLICAS" -gt 1 ]; then
	log "$REPLICAS replicas of each process behind HAProxy; replica i of a process listens on 127.0.0.1:(its usual port + 100*i), e.g. 8182 and 8282 for contacts"
	# A replica that dies is HAProxy's to route around (its log says so):
	# run until HAProxy itself exits or Ctrl-C.
	wait "$HAPROXY_PID" || true
	log "HAProxy exited; shutting down"
	exit 0
fi
wait -n "${PIDS[@]}" || true
log "a process exited; shutting down"
