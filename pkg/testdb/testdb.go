// Package testdb gives each test package its own database on the real
// PostgreSQL server, cloned from a template that was migrated once per set
// of migrations, so tests start from a clean, fully migrated schema in
// milliseconds and never share rows with another package.
package testdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history"
)

// DefaultURL is the local server every machine of this project runs.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// startServer starts a throwaway server when none is reachable; it is set
// only in builds with the testcontainers tag (container.go).
var startServer func(ctx context.Context) (url string, stop func(), err error)

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error
)

// ServerURL returns TEST_DATABASE_URL or the local default; when that server
// does not answer and the binary was built with the testcontainers tag, it
// starts a PostgreSQL container instead (once per test process; Ryuk, the
// testcontainers reaper, removes it when the process ends).
func ServerURL(ctx context.Context) (string, error) {
	serverOnce.Do(func() {
		serverURL = DefaultURL
		if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
			serverURL = u
		}
		c, err := pgx.Connect(ctx, serverURL)
		if err == nil {
			c.Close(ctx)
			return
		}
		if startServer == nil {
			serverErr = fmt.Errorf("connect to %s: %w (is PostgreSQL running? set TEST_DATABASE_URL, or install Docker for the testcontainers fallback)", redact(serverURL), err)
			return
		}
		serverURL, _, serverErr = startServer(ctx)
	})
	return serverURL, serverErr
}

// MigrateFunc applies every migration set a service needs.
type MigrateFunc func(ctx context.Context, d *db.DB) error

// New returns a pool on a fresh database whose schema has been migrated,
// dropped when the test ends. fsys lists every migration set migrate
// applies: their contents name the template, so a changed migration makes
// a new template instead of reusing a stale one.
func New(t testing.TB, schema string, migrate MigrateFunc, fsys ...fs.FS) *db.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, _, drop, err := Create(ctx, schema, migrate, fsys...)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		drop()
	})
	return d
}

// Create is New for code without a testing.TB (TestMain, e2e harnesses).
// It returns the pool, the database URL (for child processes) and a drop func.
func Create(ctx context.Context, schema string, migrate MigrateFunc, fsys ...fs.FS) (*db.DB, string, func(), error) {
	server, err := ServerURL(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return nil, "", nil, fmt.Errorf("connect to %s: %w", redact(server), err)
	}
	defer admin.Close(ctx)

	fp, err := fingerprint(fsys)
	if err != nil {
		return nil, "", nil, err
	}
	tmpl := fmt.Sprintf("crmtpl_%s_%s", schema, fp[:12])
	// One process at a time builds or clones a given template.
	lock := int64(0)
	for _, b := range []byte(tmpl) {
		lock = lock*31 + int64(b)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", lock); err != nil {
		return nil, "", nil, err
	}
	defer func() { _, _ = admin.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", lock) }()

	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", tmpl).Scan(&exists); err != nil {
		return nil, "", nil, err
	}
	if !exists {
		if err := buildTemplate(ctx, admin, server, tmpl, schema, migrate); err != nil {
			return nil, "", nil, err
		}
	}
	name := fmt.Sprintf("crmtest_%s_%s", schema, randHex(6))
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{tmpl}.Sanitize())); err != nil {
		return nil, "", nil, fmt.Errorf("clone template: %w", err)
	}
	dbURL := withDatabase(server, name)
	// Like a service's pool (platform.Open): triggers see who a request
	// acts for.
	d, err := db.Open(ctx, dbURL, schema, 20, history.Session())
	if err != nil {
		return nil, "", nil, err
	}
	drop := func() {
		c, err := pgx.Connect(context.Background(), server)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
	return d, dbURL, drop, nil
}

func buildTemplate(ctx context.Context, admin *pgx.Conn, server, tmpl, schema string, migrate MigrateFunc) error {
	building := tmpl + "_build"
	_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()+" WITH (FORCE)")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	d, err := db.Open(ctx, withDatabase(server, building), schema, 2)
	if err != nil {
		return err
	}
	if _, err := d.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm"); err != nil {
		d.Close()
		return fmt.Errorf("create pg_trgm: %w", err)
	}
	err = migrate(ctx, d)
	d.Close()
	if err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	// Renaming last makes a half-built template impossible to clone.
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s",
		pgx.Identifier{building}.Sanitize(), pgx.Identifier{tmpl}.Sanitize())); err != nil {
		return fmt.Errorf("finish template: %w", err)
	}
	return nil
}

func fingerprint(sets []fs.FS) (string, error) {
	h := sha256.New()
	for _, fsys := range sets {
		var paths []string
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				paths = append(paths, p)
			}
			return err
		})
		if err != nil {
			return "", err
		}
		sort.Strings(paths)
		for _, p := range paths {
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func withDatabase(server, name string) string {
	u, err := url.Parse(server)
	if err != nil {
		return server
	}
	u.Path = "/" + name
	return u.String()
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the test server"
	}
	return u.Redacted()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
