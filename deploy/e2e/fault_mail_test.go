package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/services/mail/imaptest"
)

// mailKillEnv lets the mail process sync from the test IMAP server on
// loopback and shortens what a killed sync costs: its lease (and so the
// wait before another run may take the mailbox) is 10 s, and the sweep
// that queues syncs runs every second.
var mailKillEnv = map[string]string{
	"MAIL_IMAP_BLOCK_PRIVATE": "false",
	"MAIL_SYNC_TIMEOUT":       "10s",
	"MAIL_SYNC_INTERVAL":      "1s",
}

// syncBatch is the syncer's default batch: it checkpoints its position
// after storing each batch of this many messages.
const syncBatch = 25

// TestFaultMailKilledMidSync kills the mail process (SIGKILL) in the middle
// of a mailbox's first IMAP sync — after some messages of a batch were
// stored but before the batch's position was checkpointed, so the resumed
// sync fetches them again — and starts it again. After the sync finishes
// every message of the mailbox is stored exactly once, all of them are
// linked to the contact who sent them, and the mailbox reports ok.
//
// It runs on a stack of its own (identity, contacts, mail) because mail
// needs settings the other fault tests must not get (private addresses
// allowed, a short lease, a one-second sweep).
func TestFaultMailKilledMidSync(t *testing.T) {
	const total = 300
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	env := maps.Clone(faultEnv)
	maps.Copy(env, mailKillEnv)
	s, err := Start(ctx, builtBin, Options{Only: []string{"identity", "contacts", "mail"}, Faults: true, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	adm := faultAdmin(t, s)

	srv := imaptest.Start(t, "inbox@mailkill.test", "imap-secret")
	sender := uniq("customer") + "@mailkill.test"
	run := uniq("mailkill")
	want := make([]string, 0, total)
	for i := range total {
		id := fmt.Sprintf("<%s-%03d@mailkill.test>", run, i)
		want = append(want, id)
		srv.Append(t, "INBOX", []byte(fmt.Sprintf("Message-ID: %s\r\nFrom: Cara Customer <%s>\r\nTo: %s\r\n"+
			"Subject: Order %d\r\nDate: Mon, 02 Mar 2026 10:%02d:%02d +0000\r\nContent-Type: text/plain\r\n\r\n"+
			"Order %d: please ship it.\r\n", id, sender, srv.Username, i, i/60, i%60, i)))
	}
	contact := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{
		"first_name": "Cara", "last_name": "Customer", "email": sender,
	}))

	db, err := pgx.Connect(ctx, s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var mailbox int64
	progress := func() (stored, lastUID int) {
		t.Helper()
		if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM mail.messages WHERE mailbox_id = $1), last_uid
			FROM mail.mailboxes WHERE id = $1`, mailbox).Scan(&stored, &lastUID); err != nil {
			t.Fatal(err)
		}
		return stored, lastUID
	}

	// A magnifying glass for the kill point: every answer of PostgreSQL to
	// mail comes 5 ms late, so storing a batch takes about half a second
	// and the kill lands inside one.
	toxic(t, s.Faults.PG["mail"], "slow-store", "latency", "downstream", toxiclient.Attributes{"latency": 5})
	started := time.Now()
	mailbox = must(t, http.StatusCreated)(adm.Do("POST", "/mailboxes", map[string]any{
		"host": srv.Host, "port": srv.Port, "tls": false, "username": srv.Username, "password": srv.Password,
	})).ID()

	// Kill once a quarter of the mailbox is stored, inside a batch: a few
	// of its messages are stored, its checkpoint is not (storing the rest
	// of the batch takes another 200 ms or more).
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n, _ := progress()
		if n >= total/4 && n%syncBatch >= 5 && n%syncBatch <= 15 {
			break
		}
		if n == total || time.Now().After(deadline) {
			t.Fatalf("the sync never reached the kill point (%d of %d stored after %s):\n%s",
				n, total, time.Since(started).Round(time.Millisecond), s.Logs("mail"))
		}
	}
	s.Stop("mail", true)
	killed := time.Now()
	atKill, uidAtKill := progress()
	if atKill <= 0 || atKill >= total {
		t.Fatalf("killed with %d of %d stored: not mid-sync", atKill, total)
	}
	if uidAtKill >= atKill {
		t.Errorf("killed with %d stored and the position at UID %d: the kill missed the stored-but-not-checkpointed window", atKill, uidAtKill)
	}
	if err := s.Faults.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := s.StartProcess(ctx, "mail"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(ctx, "mail"); err != nil {
		t.Fatal(err)
	}

	// The killed run's lease (10 s) keeps the mailbox until it expires; the
	// sweep then queues a sync that resumes from the checkpoint.
	var mb *Response
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r, err := adm.Do("GET", fmt.Sprintf("/mailboxes/%d", mailbox), nil)
		if err == nil && r.Status == http.StatusOK && r.Data()["status"] == "ok" && r.Data()["last_uid"] == float64(total) {
			mb = r
			break
		}
		if time.Now().After(deadline) {
			n, uid := progress()
			t.Fatalf("the sync did not finish within 90 s of the restart (%d stored, last UID %d): %v %v\n%s", n, uid, r, err, s.Logs("mail"))
		}
	}
	converged := time.Now()

	rows, err := db.Query(ctx, "SELECT message_id FROM mail.messages WHERE mailbox_id = $1", mailbox)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored messages, each exactly once (-want +got):\n%s", diff)
	}
	if n := count(t, s, "SELECT count(*) FROM mail.messages WHERE message_id LIKE $1", "<"+run+"-%"); n != total {
		t.Errorf("%d rows hold the mailbox's messages, want %d", n, total)
	}
	if e := mb.Data()["last_error"]; e != nil {
		t.Errorf("mailbox last_error = %v, want none", e)
	}
	linked := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d/linked-emails?per_page=1", contact.ID()), nil))
	if n := linked.JSON["total"]; n != float64(total) {
		t.Errorf("contact's linked emails: total %v, want %d", n, total)
	}
	if subj, _ := linked.JSON["data"].([]any); len(subj) != 1 || !strings.HasPrefix(fmt.Sprint(subj[0].(map[string]any)["subject"]), "Order ") {
		t.Errorf("contact's newest linked email: %s", linked.Body)
	}
	t.Logf("mail killed mid-sync: %d messages; killed %s after the mailbox was created with %d stored and the position at UID %d (%d to fetch again); every message stored once, %s after the kill",
		total, killed.Sub(started).Round(time.Millisecond), atKill, uidAtKill, atKill-uidAtKill, converged.Sub(killed).Round(100*time.Millisecond))
}
