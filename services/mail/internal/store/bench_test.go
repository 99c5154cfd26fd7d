package store_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/mail/internal/mail"
	"github.com/opencrm/crm/services/mail/internal/store"
	"github.com/opencrm/crm/services/mail/migrations"
)

func migrate(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "mail", migrations.FS) }

// BenchmarkLinked lists the newest 25 of 200 messages of one address among
// 100,000 messages with 300,000 participants: the linked-emails read path.
func BenchmarkLinked(b *testing.B) {
	d := testdb.New(b, "mail", migrate, migrations.FS)
	ctx := context.Background()
	if _, err := d.Exec(ctx, `
		INSERT INTO messages (message_id, from_address, to_addresses, subject, body_text, snippet, sent_at, direction)
		SELECT 'm' || i || '@bench', 'u' || (i % 500) || '@example.com', ARRAY['v' || (i % 700) || '@example.org'],
			'subject ' || i, repeat('body ', 200), 'body body', now() - i * interval '1 minute', 'inbound'
		FROM generate_series(1, 100000) AS i`); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Exec(ctx, `
		INSERT INTO participants (message_id, address, role)
		SELECT id, from_address, 'from' FROM messages
		UNION ALL SELECT id, to_addresses[1], 'to' FROM messages
		UNION ALL SELECT id, 'w' || (id % 1000) || '@example.net', 'cc' FROM messages;
		ANALYZE`); err != nil {
		b.Fatal(err)
	}
	st, err := store.New(d)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		msgs, total, err := st.Linked(ctx, []string{"u7@example.com"}, list.First(25, "sent_at"))
		if err != nil || len(msgs) != 25 || total != 200 {
			b.Fatalf("Linked: %d rows, total %d, err %v", len(msgs), total, err)
		}
	}
}

// BenchmarkCreateMessage stores one new message with three participants.
func BenchmarkCreateMessage(b *testing.B) {
	d := testdb.New(b, "mail", migrate, migrations.FS)
	st, err := store.New(d)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	m := mail.NewMessage{From: "a@x.example", To: []string{"b@y.example"}, Cc: []string{"c@z.example"},
		Subject: "s", BodyText: "hello there", Direction: mail.Inbound}
	i := 0
	for b.Loop() {
		i++
		m.MessageID = "bench-" + strconv.Itoa(i)
		if _, created, err := st.CreateMessage(ctx, m); err != nil || !created {
			b.Fatalf("created=%v err=%v", created, err)
		}
	}
}
