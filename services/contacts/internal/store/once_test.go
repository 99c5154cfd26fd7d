package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestCreateOnceReplaysStoredAnswers: a key stored before the store kept
// records (the internal API's whole 201 body) is replayed as the record
// it created, without a second insert; a key stored now is too; the same
// key with another record is refused.
func TestCreateOnceReplaysStoredAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	ada := contacts.Contact{FirstName: "Ada", LastName: "Lovelace", Status: contacts.StatusActive}

	// A key as insertOnce stored it before idempotency.Once: the request's
	// fingerprint, the status and the whole body, in the contact's
	// transaction.
	var first contacts.Contact
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if first, err = insertContact(ctx, tx, ada); err != nil {
			return err
		}
		request, err := json.Marshal(ada)
		if err != nil {
			return err
		}
		body, err := json.Marshal(map[string]any{"data": first})
		if err != nil {
			return err
		}
		hash := sha256.Sum256(request)
		_, err = tx.Exec(ctx, `INSERT INTO idempotency_keys (key, request_hash, status, response) VALUES ($1, $2, 201, $3)`,
			"old-key", hash[:], body)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := s.CreateContactOnce(ctx, "new-key", ada)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Replayed {
		t.Fatal("a new key replayed")
	}
	tests := []struct {
		key  string
		want contacts.Contact
	}{
		{"old-key", first},
		{"new-key", fresh.Value},
	}
	for _, tt := range tests {
		got, err := s.CreateContactOnce(ctx, tt.key, ada)
		if err != nil {
			t.Fatalf("%s: %v", tt.key, err)
		}
		if !got.Replayed {
			t.Errorf("%s: not replayed", tt.key)
		}
		if diff := cmp.Diff(tt.want, got.Value); diff != "" {
			t.Errorf("%s: replayed record (-want +got):\n%s", tt.key, diff)
		}
	}
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM contacts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d contacts, want 2 (one per key)", n)
	}
	other := ada
	other.FirstName = "Grace"
	if _, err := s.CreateContactOnce(ctx, "old-key", other); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Errorf("reused key: %v, want %v", err, idempotency.ErrKeyReused)
	}
}
