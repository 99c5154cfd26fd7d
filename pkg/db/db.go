// Package db opens a service's PostgreSQL pool confined to its own schema,
// applies its embedded migrations under an advisory lock, and runs
// transactions as closures so handlers never hold a pgx.Tx.
package db

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"regexp"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/opencrm/crm/pkg/tracing"
)

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Querier is what both a pool and a transaction offer; storage code takes
// it so the same query runs inside or outside a transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// DB is a pool whose connections see only the service's schema (and public,
// where extensions such as pg_trgm live).
type DB struct {
	*pgxpool.Pool
	Schema string
}

// Open connects with search_path set to schema. maxConns 0 keeps pgx's
// default. Every statement is traced (a span per query, batch and copy,
// named by its SQL verb and carrying the statement text, never its
// arguments) when tracing is set up (pkg/tracing); otherwise no hook runs.
func Open(ctx context.Context, url, schema string, maxConns int32, opts ...Option) (*DB, error) {
	if !schemaName.MatchString(schema) {
		return nil, fmt.Errorf("db: invalid schema name %q", schema)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("db: parse url: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema + ",public"
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if tracing.Active() {
		cfg.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithTrimSQLInSpanName(), otelpgx.WithDisableConnectionDetailsInAttributes(),
			// A span per pool checkout doubled the spans of a request for a
			// wait the pool metrics already show (pgxpool_*).
			otelpgx.WithDisableAcquireTracer(),
			// Pool and query metrics are Prometheus's (pgxpool_*, the
			// HTTP histograms); otelpgx's would time every statement, and
			// look the global meter up, for a meter nobody reads.
			otelpgx.WithMeterProvider(metricnoop.NewMeterProvider()))
	}
	for _, o := range opts {
		o(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("db: connect: %w", err)
	}
	return &DB{Pool: pool, Schema: schema}, nil
}

// Ping is a readiness check.
func (d *DB) Ping(ctx context.Context) error { return d.Pool.Ping(ctx) }

// InTx runs fn in a transaction, committing when it returns nil.
func (d *DB) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, d.Pool, fn)
}

// Migrate applies the migrations in fsys (tern format: 001_name.sql, with
// "---- create above / drop below ----") to the schema. component names the
// migration set, so shared packages (outbox, notes...) keep their own
// version table beside the service's: <schema>.<component>_schema_version.
// The whole run holds an advisory lock keyed by schema and component, so
// replicas starting together migrate once.
func Migrate(ctx context.Context, d *DB, component string, fsys fs.FS) error {
	if !schemaName.MatchString(component) {
		return fmt.Errorf("db: invalid migration component %q", component)
	}
	conn, err := d.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("db: migrate %s: %w", component, err)
	}
	defer conn.Release()
	c := conn.Conn()
	key := LockKey("crm-migrate:" + d.Schema + "." + component)
	if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return fmt.Errorf("db: migrate lock: %w", err)
	}
	defer func() { _, _ = c.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key) }()
	// The schema is normally created by the operator with the service's role
	// as owner; create it only when missing, so a role without CREATE on the
	// database still migrates its own schema.
	var exists bool
	if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", d.Schema).Scan(&exists); err != nil {
		return fmt.Errorf("db: look up schema: %w", err)
	}
	if !exists {
		if _, err := c.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{d.Schema}.Sanitize()); err != nil {
			return fmt.Errorf("db: create schema: %w", err)
		}
	}
	m, err := migrate.NewMigrator(ctx, c, d.Schema+"."+component+"_schema_version")
	if err != nil {
		return fmt.Errorf("db: migrator: %w", err)
	}
	if err := m.LoadMigrations(fsys); err != nil {
		return fmt.Errorf("db: load migrations: %w", err)
	}
	// A later release has migrated further (it runs beside this one in a
	// rolling deploy, or this one is a rollback): its migrations only
	// expanded the schema (expand/contract), so this release's code runs
	// on it as it is. Migrating would mean migrating down, dropping what
	// the later release wrote; refusing would keep this release from
	// starting at all (tern's "current version is outside the valid
	// versions").
	current, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return fmt.Errorf("db: migrate %s.%s: %w", d.Schema, component, err)
	}
	if current > int32(len(m.Migrations)) {
		return nil
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("db: migrate %s.%s: %w", d.Schema, component, err)
	}
	return nil
}

// LockKey maps a name to a PostgreSQL advisory lock key (a non-negative
// bigint, FNV-1a of the name). Prefix the name with its owner
// ("crm-identity:bootstrap") so unrelated locks do not collide.
func LockKey(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return int64(h.Sum64() & 0x7fffffffffffffff)
}

// IsUniqueViolation reports a unique constraint failure, optionally of the
// named constraint.
func IsUniqueViolation(err error, constraint string) bool {
	return isCode(err, "23505", constraint)
}

// IsForeignKeyViolation reports a foreign key failure.
func IsForeignKeyViolation(err error, constraint string) bool {
	return isCode(err, "23503", constraint)
}

func isCode(err error, code, constraint string) bool {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != code {
		return false
	}
	return constraint == "" || pg.ConstraintName == constraint
}

// IsNoRows reports a query that matched nothing.
func IsNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
