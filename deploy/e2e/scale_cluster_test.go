//go:build scale

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The second PostgreSQL cluster contacts moves to, made by the test with
// Debian's postgresql-common and dropped at its end.
const (
	scaleCluster     = "crmscale"
	scaleClusterPort = 5499
)

// pgVersion is the PostgreSQL major version installed (/etc/postgresql).
func pgVersion(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(entries) == 0 {
		t.Fatalf("no PostgreSQL under /etc/postgresql (apt-get install postgresql): %v", err)
	}
	return entries[0].Name()
}

func runCmd(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// secondCluster creates and starts a PostgreSQL cluster on
// scaleClusterPort with trust authentication on loopback, and a database
// bootstrapped as the Kubernetes Job and make run do it
// (deploy/postgres/init.sql); it returns the database's superuser URL.
// The cluster is dropped when the test ends.
func secondCluster(t *testing.T) string {
	t.Helper()
	ver := pgVersion(t)
	// A cluster an interrupted run left behind goes first.
	_ = exec.Command("pg_dropcluster", "--stop", ver, scaleCluster).Run()
	runCmd(t, "pg_createcluster", ver, scaleCluster, "-p", fmt.Sprint(scaleClusterPort), "--",
		"--auth=trust", "--no-sync")
	t.Cleanup(func() {
		if out, err := exec.Command("pg_dropcluster", "--stop", ver, scaleCluster).CombinedOutput(); err != nil {
			t.Errorf("pg_dropcluster: %v\n%s", err, out)
		}
	})
	runCmd(t, "pg_ctlcluster", "--skip-systemctl-redirect", ver, scaleCluster, "start")

	server := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", scaleClusterPort)
	admin, err := pgx.Connect(t.Context(), server)
	if err != nil {
		t.Fatalf("second cluster: %v", err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE crm"); err != nil {
		t.Fatal(err)
	}
	dbURL := withDB(server, "crm")
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	sql, err := os.ReadFile(filepath.Join(root, "deploy", "postgres", "init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(t.Context(), string(sql)); err != nil {
		t.Fatalf("init.sql on the second cluster: %v", err)
	}
	return dbURL
}

// TestScaleContactsOnSecondCluster moves contacts to a PostgreSQL server
// of its own purely by its DATABASE_URL — its role and schema made there
// by deploy/postgres/init.sql, every other context on the first — and
// runs the cross-context scenario and the double qualifications through
// two replicas of everything: contacts migrates, serves and relays there.
func TestScaleContactsOnSecondCluster(t *testing.T) {
	contactsDB := secondCluster(t)
	role := withDB(contactsDB, "crm")
	u := strings.Replace(role, "postgres://postgres@", "postgres://crm_contacts@", 1)
	s := startScaleStack(t, map[string]string{"contacts": u})

	sc := runScenario(t, s, contactsDB)
	doubleQualify(t, s, sc.adm, contactsDB, 20)
	checkOutbox(t, s, map[string]string{"contacts": contactsDB})

	// Contacts' tables are on the second cluster only.
	for _, db := range []struct {
		url  string
		want bool
	}{{contactsDB, true}, {s.DatabaseURL, false}} {
		c, err := pgx.Connect(t.Context(), db.url)
		if err != nil {
			t.Fatal(err)
		}
		var has bool
		err = c.QueryRow(t.Context(), `SELECT to_regclass('contacts.contacts') IS NOT NULL`).Scan(&has)
		c.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if has != db.want {
			t.Errorf("%s: contacts.contacts exists = %v, want %v", db.url, has, db.want)
		}
	}
}
