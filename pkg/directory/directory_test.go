package directory_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
)

func TestEventsNeverRollBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "dirtest", directory.Migrate, directory.Migrations)
	h := directory.Handle(d)
	now := time.Now().UTC()
	ev := func(name string, at time.Time) outbox.Event {
		b, _ := json.Marshal(directory.User{ID: 5, Name: name, Email: "x@y.z", Role: "user", Active: true, UpdatedAt: at})
		return outbox.Event{Type: directory.UserUpdated, Data: b}
	}
	for _, e := range []outbox.Event{ev("new", now), ev("old", now.Add(-time.Minute))} {
		if err := h(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	var name string
	if err := d.QueryRow(ctx, `SELECT name FROM directory_users WHERE id = 5`).Scan(&name); err != nil || name != "new" {
		t.Fatalf("name = %q, %v", name, err)
	}
	ok, err := directory.UserExists(ctx, d, 5)
	if err != nil || !ok {
		t.Fatalf("UserExists = %v, %v", ok, err)
	}
}

func TestSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "dirtest", directory.Migrate, directory.Migrations)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/internal/users" || r.Header.Get(auth.InternalHeader) != "s3cret-s3cret-s3cret" {
			w.WriteHeader(401)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": []directory.User{
			{ID: 1, Name: "Ada", Email: "ada@x.io", Role: "admin", Active: true, UpdatedAt: time.Now()},
		}})
	}))
	t.Cleanup(srv.Close)
	if err := directory.Sync(ctx, d, srv.URL, "wrong"); err == nil {
		t.Fatal("sync with a wrong secret should fail")
	}
	if err := directory.Sync(ctx, d, srv.URL, "s3cret-s3cret-s3cret"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := directory.UserExists(ctx, d, 1); !ok {
		t.Fatal("user 1 not synced")
	}
}
