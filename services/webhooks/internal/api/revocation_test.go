package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/internal/ingest"
)

// identity stands in for the identity context: it writes user.* events to
// its outbox as identity's store does, and the real relay publishes them
// on a stream of the test's own, which webhooks' owner consumer reads.
type identity struct {
	t      *testing.T
	db     *db.DB
	stream string
}

func (e *env) startIdentity(t *testing.T) *identity {
	t.Helper()
	producer := testdb.New(t, "identity", outbox.Migrate, outbox.Migrations)
	stream := "test:identity:" + randHex(6)
	ctx, cancel := context.WithCancel(context.Background())
	owners, err := ingest.NewOwners(e.store, e.log)
	if err != nil {
		t.Fatal(err)
	}
	c := owners.Consumer(e.rdb, stream, "test")
	relay := &outbox.Relay{DB: producer, Redis: e.rdb, Log: e.log}
	stop := runAll(ctx, c.Run, relay.Run)
	t.Cleanup(func() {
		cancel()
		stop()
		e.rdb.Del(context.Background(), stream)
	})
	return &identity{t: t, db: producer, stream: stream}
}

// publish commits a user.* event for u as identity does.
func (id *identity) publish(typ string, u directory.User) {
	id.t.Helper()
	if u.Name == "" {
		u.Name, u.Email = "user "+strconv.FormatInt(u.ID, 10), "u"+strconv.FormatInt(u.ID, 10)+"@example.com"
	}
	ctx := context.Background()
	if err := id.db.InTx(ctx, func(tx pgx.Tx) error {
		return outbox.Add(ctx, tx, id.stream, typ, strconv.FormatInt(u.ID, 10), u)
	}); err != nil {
		id.t.Fatal(err)
	}
}

// TestRevokedTokenLosesItsSubscriptions: revoking a token (identity
// deactivates its service user and publishes user.updated) disables the
// token's subscriptions within 5 s, with the reason; their pending
// deliveries stop being attempted and new events make none; another
// owner's are untouched; an admin cannot re-enable them, the token cannot
// make new ones, and a late copy of an older state changes nothing.
func TestRevokedTokenLosesItsSubscriptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	idp := e.startIdentity(t)
	failing, fine := newReceiver(t, status(http.StatusInternalServerError)), newReceiver(t, nil)
	const tokenUser, otherUser = 601, 602
	created := time.Now().Add(-time.Minute)
	idp.publish(directory.UserCreated, directory.User{ID: tokenUser, Role: auth.RoleUser, Active: true, UpdatedAt: created})
	tok := e.tokenFor(tokenUser, "webhooks:write", "contacts:read")
	revoked := e.createAs(tok, failing.url(), "*")
	kept := e.createAs(e.tokenFor(otherUser, "webhooks:write", "contacts:read"), fine.url(), "contact.created")

	e.emit("contacts", "contact.created", "5", map[string]any{"id": 5})
	eventually(t, "attempts to the failing receiver", func() bool { return failing.count() >= 2 })

	start := time.Now()
	idp.publish(directory.UserUpdated, directory.User{ID: tokenUser, Role: auth.RoleUser, Active: false, UpdatedAt: time.Now()})
	var got hook
	eventually(t, "the subscription disabled", func() bool {
		got = decode[record[hook]](t, e.do("GET", hookPath(revoked.ID, ""), e.admin, nil)).Data
		return !got.Active
	})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("disabled %v after the revocation, want within 5 s", took)
	}
	if got.DisabledReason == nil || *got.DisabledReason != "owner's access token was revoked" {
		t.Errorf("disabled_reason = %v", deref(got.DisabledReason))
	}

	time.Sleep(300 * time.Millisecond) // an attempt under way at the revocation ends
	before := failing.count()
	logged := len(e.deliveries(revoked.ID, ""))
	e.emit("contacts", "contact.created", "6", map[string]any{"id": 6})
	time.Sleep(600 * time.Millisecond) // a dozen retry periods
	if n := failing.count(); n != before {
		t.Errorf("%d attempts after the subscription was disabled", n-before)
	}
	ds := e.deliveries(revoked.ID, "")
	if len(ds) != logged || ds[0].Status != "pending" {
		t.Errorf("deliveries of the disabled subscription %+v, want the %d pending ones only", ds, logged)
	}
	eventually(t, "the other owner's deliveries", func() bool { return fine.count() == 2 })
	if k := decode[record[hook]](t, e.do("GET", hookPath(kept.ID, ""), e.admin, nil)).Data; !k.Active {
		t.Errorf("another owner's subscription disabled: %+v", k)
	}

	const gone = "the subscription's owner no longer has access (its access token was revoked, or the user was deactivated or is no longer an admin)"
	wantProblem(t, e.do("PUT", hookPath(revoked.ID, ""), e.admin, `{"active":true}`), http.StatusConflict, "conflict", gone)
	wantProblem(t, e.do("POST", "/webhooks", tok, map[string]any{"url": fine.url(), "events": []string{"*"}}),
		http.StatusConflict, "conflict", gone)
	// A copy of the older, active state (redelivered late) is ignored.
	idp.publish(directory.UserUpdated, directory.User{ID: tokenUser, Role: auth.RoleUser, Active: true, UpdatedAt: created})
	time.Sleep(300 * time.Millisecond)
	wantProblem(t, e.do("PUT", hookPath(revoked.ID, ""), e.admin, `{"active":true}`), http.StatusConflict, "conflict", gone)
	if n := failing.count(); n != before {
		t.Errorf("%d attempts after a stale event", n-before)
	}
}

// TestOwnersLosingAccess walks identity's user.* events through the
// owner handler: deactivating a person or revoking a token disables all
// its subscriptions; demoting an admin disables those it made as an admin
// (not a token's); an owner first heard of as a non-admin keeps older
// subscriptions; re-promotion lets an admin re-enable them; a user with
// no subscriptions, a team event and undecodable data change nothing.
func TestOwnersLosingAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	owners, err := ingest.NewOwners(e.store, e.log)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	handle := func(typ string, u directory.User) {
		t.Helper()
		at = at.Add(time.Second)
		u.UpdatedAt = at
		raw, _ := json.Marshal(u)
		if err := owners.Handle(context.Background(), outbox.Event{Type: typ, AggregateID: strconv.FormatInt(u.ID, 10), Data: raw}); err != nil {
			t.Fatal(err)
		}
	}
	const adminA, adminB, legacy, tokenUser = 11, 12, 13, 14
	url := "http://127.0.0.1:1/x"
	for _, id := range []int64{adminA, adminB} {
		handle(directory.UserCreated, directory.User{ID: id, Role: auth.RoleAdmin, Active: true})
	}
	a := e.createAs(e.issuer.Admin(t, adminA), url, "*")
	b := e.createAs(e.issuer.Admin(t, adminB), url, "*")
	l := e.createAs(e.issuer.Admin(t, legacy), url, "*") // made before webhooks heard of 13
	tk := e.createAs(e.tokenFor(tokenUser, "webhooks:write"), url, "*")
	state := func() map[int64]string {
		out := map[int64]string{}
		for _, h := range decode[page[hook]](t, e.do("GET", "/webhooks", e.admin, nil)).Data {
			out[h.ID] = "active"
			if !h.Active {
				out[h.ID] = "disabled: " + deref(h.DisabledReason)
			}
		}
		return out
	}
	steps := []struct {
		name string
		run  func()
		want map[int64]string
	}{
		{"a team event and undecodable data", func() {
			_ = owners.Handle(context.Background(), outbox.Event{Type: directory.TeamDeleted, Data: json.RawMessage(`{"id":1}`)})
			_ = owners.Handle(context.Background(), outbox.Event{Type: directory.UserUpdated, Data: json.RawMessage(`[`)})
		}, map[int64]string{a.ID: "active", b.ID: "active", l.ID: "active", tk.ID: "active"}},
		{"admin A demoted", func() { handle(directory.UserUpdated, directory.User{ID: adminA, Role: auth.RoleUser, Active: true}) },
			map[int64]string{a.ID: "disabled: owner is no longer an admin", b.ID: "active", l.ID: "active", tk.ID: "active"}},
		{"admin B deactivated", func() { handle(directory.UserUpdated, directory.User{ID: adminB, Role: auth.RoleAdmin, Active: false}) },
			map[int64]string{a.ID: "disabled: owner is no longer an admin", b.ID: "disabled: owner was deactivated", l.ID: "active", tk.ID: "active"}},
		{"first heard of as a non-admin", func() { handle(directory.UserUpdated, directory.User{ID: legacy, Role: auth.RoleUser, Active: true}) },
			map[int64]string{a.ID: "disabled: owner is no longer an admin", b.ID: "disabled: owner was deactivated", l.ID: "active", tk.ID: "active"}},
		{"token's user created, then revoked", func() {
			handle(directory.UserCreated, directory.User{ID: tokenUser, Role: auth.RoleUser, Active: true})
			handle(directory.UserUpdated, directory.User{ID: tokenUser, Role: auth.RoleUser, Active: false})
		}, map[int64]string{a.ID: "disabled: owner is no longer an admin", b.ID: "disabled: owner was deactivated", l.ID: "active",
			tk.ID: "disabled: owner's access token was revoked"}},
		{"a user without subscriptions deactivated", func() { handle(directory.UserUpdated, directory.User{ID: 99, Active: false}) },
			map[int64]string{a.ID: "disabled: owner is no longer an admin", b.ID: "disabled: owner was deactivated", l.ID: "active",
				tk.ID: "disabled: owner's access token was revoked"}},
		{"admin A promoted again and re-enabled", func() {
			handle(directory.UserUpdated, directory.User{ID: adminA, Role: auth.RoleAdmin, Active: true})
			if r := e.do("PUT", hookPath(a.ID, ""), e.admin, `{"active":true}`); r.status != http.StatusOK {
				t.Fatalf("re-enable: %d %s", r.status, r.body)
			}
		}, map[int64]string{a.ID: "active", b.ID: "disabled: owner was deactivated", l.ID: "active",
			tk.ID: "disabled: owner's access token was revoked"}},
	}
	for _, s := range steps {
		s.run()
		if diff := cmp.Diff(s.want, state()); diff != "" {
			t.Fatalf("after %s (-want +got):\n%s", s.name, diff)
		}
	}
}
