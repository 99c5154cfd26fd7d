package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Aliases are the addresses merges gave contact id, sorted.
func (s *Store) Aliases(ctx context.Context, contactID int64) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT address FROM contact_aliases WHERE contact_id = $1 ORDER BY address`, contactID)
	if err != nil {
		return nil, fmt.Errorf("store: aliases: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: aliases: %w", err)
	}
	return out, nil
}

// AddAliases gives contact into the addresses (lower case) of a merge and
// the aliases the merged contacts had, in one transaction, and answers
// how many it added: a repeat adds none.
func (s *Store) AddAliases(ctx context.Context, into int64, merged []int64, addresses []string) (int64, error) {
	var added int64
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO contact_aliases (contact_id, address)
			SELECT $1, a FROM (SELECT unnest($3::text[]) AS a
				UNION SELECT address FROM contact_aliases WHERE contact_id = ANY($2)) x
			WHERE a <> ''
			ON CONFLICT DO NOTHING`, into, merged, addresses)
		if err != nil {
			return err
		}
		added = tag.RowsAffected()
		_, err = tx.Exec(ctx, `DELETE FROM contact_aliases WHERE contact_id = ANY($1)`, merged)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: add aliases: %w", err)
	}
	return added, nil
}
