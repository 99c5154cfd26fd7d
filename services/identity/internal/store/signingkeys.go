package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// PublishedKeys returns the active key and the keys retired within the
// policy's RetiredFor, newest first. Both sides of the comparison are the
// database's clock, which set retired_at.
func (s *Store) PublishedKeys(ctx context.Context, p identity.KeyPolicy) ([]identity.StoredKey, error) {
	rows, err := s.db.Query(ctx, `SELECT kid, public_key, private_key, encryption, created_at, retired_at FROM signing_keys
		WHERE retired_at IS NULL OR retired_at > now() - make_interval(secs => $1)
		ORDER BY created_at DESC, kid`, p.RetiredFor.Seconds())
	if err != nil {
		return nil, fmt.Errorf("published keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (identity.StoredKey, error) {
		var k identity.StoredKey
		var pub []byte
		err := r.Scan(&k.Kid, &pub, &k.Private, &k.Encryption, &k.CreatedAt, &k.RetiredAt)
		k.Public = pub
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("published keys: %w", err)
	}
	return keys, nil
}

func insertKey(ctx context.Context, tx pgx.Tx, k identity.StoredKey) error {
	_, err := tx.Exec(ctx, `INSERT INTO signing_keys (kid, public_key, private_key, encryption) VALUES ($1, $2, $3, $4)`,
		k.Kid, []byte(k.Public), k.Private, k.Encryption)
	return err
}

// EnsureActiveKey inserts k unless an active key exists.
func (s *Store) EnsureActiveKey(ctx context.Context, k identity.StoredKey) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := xactLock(ctx, tx, "signing-keys"); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM signing_keys WHERE retired_at IS NULL)`).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		return insertKey(ctx, tx, k)
	})
}

// RotateKey retires the active key and inserts k as the new active one.
func (s *Store) RotateKey(ctx context.Context, k identity.StoredKey) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := xactLock(ctx, tx, "signing-keys"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE signing_keys SET retired_at = now() WHERE retired_at IS NULL`); err != nil {
			return err
		}
		if err := insertKey(ctx, tx, k); err != nil {
			return err
		}
		_, err := appendAudit(ctx, tx, own(ctx, identityapi.AuditSigningKeyRotated, "", 0, map[string]string{"kid": k.Kid}))
		return err
	})
}
