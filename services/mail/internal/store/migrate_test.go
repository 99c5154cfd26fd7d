package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/mail/migrations"
)

// TestMessageIDMigration: rows stored before message ids kept their angle
// brackets get them; two rows that become one id leave the earliest, with
// the participants of both. The rows are written as the old code stored
// them, then the migration's up part runs again over them.
func TestMessageIDMigration(t *testing.T) {
	t.Parallel()
	d := testdb.New(t, "mail", migrate, migrations.FS)
	ctx := context.Background()
	upSQL, _ := testdb.Sections(t, migrations.FS, "003_message_id_brackets.sql")
	// "plain@x" as stored by POST /emails; "<dup@x>" from an id sent as
	// "<<dup@x>>" and, later, "dup@x" from "<dup@x>"; "<ok@x>" stays.
	if _, err := d.Exec(ctx, `
		INSERT INTO messages (message_id, from_address, sent_at, direction) VALUES
			('plain@x', 'a@x.example', now(), 'inbound'),
			('<dup@x>', 'b@x.example', now(), 'inbound'),
			('dup@x', 'c@x.example', now(), 'inbound'),
			('<ok@x>', 'd@x.example', now(), 'inbound');
		INSERT INTO participants (message_id, address, role)
		SELECT id, lower(from_address), 'from' FROM messages;
		INSERT INTO participants (message_id, address, role)
		SELECT id, 'shared@x.example', 'to' FROM messages WHERE message_id IN ('<dup@x>', 'dup@x')`); err != nil {
		t.Fatal(err)
	}
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, upSQL)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	type msg struct {
		ID           string
		From         string
		Participants string
	}
	rows, err := d.Query(ctx, `SELECT m.message_id, m.from_address,
			(SELECT string_agg(p.role || ':' || p.address, ' ' ORDER BY p.role, p.address) FROM participants p WHERE p.message_id = m.id)
		FROM messages m ORDER BY m.id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[msg])
	if err != nil {
		t.Fatal(err)
	}
	want := []msg{
		{"<plain@x>", "a@x.example", "from:a@x.example"},
		{"<dup@x>", "b@x.example", "from:b@x.example from:c@x.example to:shared@x.example"},
		{"<ok@x>", "d@x.example", "from:d@x.example"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}
