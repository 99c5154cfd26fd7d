package directory_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem"
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
	f := identityapitest.NewFake(secret)
	ada := f.AddUser(directory.User{Name: "Ada", Email: "ada@x.io", Role: "admin", Active: true})
	srv, _ := f.Start(t)
	if err := directory.Sync(ctx, d, srv.URL, "wrong-secret-wrong-secret"); err == nil {
		t.Fatal("sync with a wrong secret should fail")
	}
	if err := directory.Sync(ctx, d, srv.URL, secret); err != nil {
		t.Fatal(err)
	}
	if ok, _ := directory.UserExists(ctx, d, ada.ID); !ok {
		t.Fatal("user not synced")
	}
}

const secret = "s3cret-s3cret-s3cret"

// TestMissAsksIdentity: a user identity created a moment ago, whose event
// has not arrived, is known at once and stored in the model; an id
// identity does not know is not; identity down is an error, never a
// false "unknown".
func TestMissAsksIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "dirtest", directory.Migrate, directory.Migrations)
	f := identityapitest.NewFake(secret)
	_, client := f.Start(t)
	users, err := directory.NewUsers(d, client)
	if err != nil {
		t.Fatal(err)
	}
	fresh := f.AddUser(directory.User{Name: "New Hire", Email: "new@x.io", Role: "user", Active: true})
	tests := []struct {
		name string
		id   int64
		want bool
	}{
		{"created a moment ago", fresh.ID, true},
		{"unknown to identity", fresh.ID + 100, false},
	}
	for _, tc := range tests {
		got, err := users.Exists(ctx, tc.id)
		if err != nil || got != tc.want {
			t.Errorf("%s: Exists = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if ok, _ := directory.UserExists(ctx, d, fresh.ID); !ok {
		t.Error("the answer of identity was not stored in the read model")
	}
	f.FailWith(http.StatusServiceUnavailable)
	if ok, err := users.Exists(ctx, fresh.ID); err != nil || !ok {
		t.Errorf("a stored user needs no identity: %v, %v", ok, err)
	}
	var p *problem.Error
	if _, err := users.Exists(ctx, fresh.ID+1); !errors.As(err, &p) || p.Status != http.StatusServiceUnavailable {
		t.Errorf("identity down: err = %v, want a 503 problem", err)
	}
}
