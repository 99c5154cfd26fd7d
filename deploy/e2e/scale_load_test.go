//go:build scale

package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencrm/crm/services/mail/imaptest"
)

// load is a steady mixed load through the gateway's frontend. Each
// operation is retried as docs/api.md tells a client to: a transport
// error or a 5xx is retried, a create that is not idempotent only after
// reading whether the first attempt was accepted, public intake with the
// same Idempotency-Key. Every answer that was retried is counted.
type load struct {
	t   *testing.T
	adm *Client
	pub *Client // X-API-Key set

	mu        sync.Mutex
	retried   map[string]int // "<status> <op>" or "transport <op>"
	failed    []string
	contacts  []int64  // accepted contact ids
	emails    []string // their e-mails
	imported  []string // e-mails of contacts imported
	public    []string // accepted public leads' e-mails
	qualified []qualifiedLead
	pdfs      int
}

type qualifiedLead struct {
	email, company string
	contact        int64
}

func (l *load) note(what string) {
	l.mu.Lock()
	l.retried[what]++
	l.mu.Unlock()
}

func (l *load) fail(format string, args ...any) {
	l.mu.Lock()
	l.failed = append(l.failed, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// try runs send until done accepts an answer, for up to two minutes: a
// qualification whose leads replica died holds its lead's lease for 60 s
// (409 qualification_in_progress until it lapses).
// before, when set, runs before every retry (not the first attempt) and
// may settle the operation by itself (a read finding the write).
func (l *load) try(op string, send func() (*Response, error), done func(*Response) bool, before func() bool) bool {
	for i := 0; i < 480; i++ {
		if i > 0 {
			time.Sleep(250 * time.Millisecond)
			if before != nil && before() {
				return true
			}
		}
		r, err := send()
		switch {
		case err != nil:
			l.note("transport " + op)
		case r.Status >= 500:
			l.note(fmt.Sprintf("%d %s", r.Status, op))
		case r.Status == http.StatusConflict && (r.JSON["code"] == "request_in_progress" || r.JSON["code"] == "qualification_in_progress"):
			l.note(fmt.Sprintf("409 %s %s", r.JSON["code"], op))
		case done(r):
			return true
		default:
			l.fail("%s: %s", op, r)
			return false
		}
	}
	l.fail("%s: not done within two minutes of retries", op)
	return false
}

// found reads a list endpoint for one search term: the id of the single
// match, or 0. It is how a client checks whether a create it got no
// answer for was accepted.
func (l *load) found(path, term string) (int64, bool) {
	r, err := l.adm.Do("GET", path+"?search="+url.QueryEscape(term), nil)
	if err != nil || r.Status != http.StatusOK {
		return 0, false // not known yet: retry the read next time
	}
	data, _ := r.JSON["data"].([]any)
	if len(data) == 0 {
		return 0, false
	}
	if len(data) > 1 {
		l.fail("%s?search=%s: %d records", path, term, len(data))
	}
	id, _ := data[0].(map[string]any)["id"].(float64)
	return int64(id), true
}

func (l *load) createContact(n int) {
	email := fmt.Sprintf("%s-c%d@scale.test", uniq("load"), n)
	var id int64
	ok := l.try("POST /contacts", func() (*Response, error) {
		return l.adm.Do("POST", "/contacts", map[string]any{"first_name": "Lo", "last_name": "Ad", "email": email})
	}, func(r *Response) bool {
		id = r.ID()
		return r.Status == http.StatusCreated
	}, func() bool {
		var hit bool
		id, hit = l.found("/contacts", email)
		return hit
	})
	if ok {
		l.mu.Lock()
		l.contacts, l.emails = append(l.contacts, id), append(l.emails, email)
		l.mu.Unlock()
	}
}

// importContacts imports a CSV of five new contacts. An import is one
// transaction: after an answer was lost, the first row's contact shows
// whether it was accepted.
func (l *load) importContacts(n int) {
	tag := uniq("imp")
	var emails []string
	csv := "first_name,last_name,email\n"
	for i := range 5 {
		e := fmt.Sprintf("%s-i%d-%d@scale.test", tag, n, i)
		emails = append(emails, e)
		csv += fmt.Sprintf("Im,Port%d,%s\n", i, e)
	}
	if l.try("POST /contacts/import", func() (*Response, error) {
		return l.adm.Upload("/contacts/import", "file", "contacts.csv", []byte(csv))
	}, func(r *Response) bool {
		return r.Status == http.StatusOK && r.JSON["imported"] == float64(len(emails))
	}, func() bool {
		_, hit := l.found("/contacts", emails[0])
		return hit
	}) {
		l.mu.Lock()
		l.imported = append(l.imported, emails...)
		l.mu.Unlock()
	}
}

func (l *load) publicLead(n int) {
	email := fmt.Sprintf("%s-p%d@scale.test", uniq("pub"), n)
	pub := l.pub.With("")
	pub.Header.Set("Idempotency-Key", uniq("scale-idem-"))
	if l.try("POST /public/leads", func() (*Response, error) {
		return pub.Do("POST", "/public/leads", map[string]any{"first_name": "Pu", "last_name": "Blic", "email": email})
	}, func(r *Response) bool {
		return r.Status == http.StatusCreated || r.Status == http.StatusAccepted
	}, nil) {
		l.mu.Lock()
		l.public = append(l.public, email)
		l.mu.Unlock()
	}
}

func (l *load) qualify(n int) {
	email := fmt.Sprintf("%s-q%d@scale.test", uniq("qual"), n)
	company := fmt.Sprintf("%s %d", uniq("Load Co "), n)
	var lead int64
	if !l.try("POST /leads", func() (*Response, error) {
		return l.adm.Do("POST", "/leads", map[string]any{"first_name": "Qu", "last_name": "Al", "email": email, "company": company})
	}, func(r *Response) bool {
		lead = r.ID()
		return r.Status == http.StatusCreated
	}, func() bool {
		var hit bool
		lead, hit = l.found("/leads", email)
		return hit
	}) {
		return
	}
	attempts := 0
	var contact int64
	if !l.try("POST /leads/{id}/qualify", func() (*Response, error) {
		attempts++
		return l.adm.Do("POST", fmt.Sprintf("/leads/%d/qualify", lead), map[string]any{
			"create_company": true, "create_deal": true, "deal_value": 10})
	}, func(r *Response) bool {
		if r.Status == http.StatusOK {
			f, _ := r.JSON["contact_id"].(float64)
			contact = int64(f)
			return true
		}
		// An earlier attempt whose answer was lost did qualify it.
		return attempts > 1 && r.Status == http.StatusConflict && r.JSON["code"] == "already_qualified"
	}, nil) {
		return
	}
	l.mu.Lock()
	l.qualified = append(l.qualified, qualifiedLead{email: email, company: company, contact: contact})
	l.mu.Unlock()
}

func (l *load) pdf(contract int64) {
	if l.try("GET /contracts/{id}/pdf", func() (*Response, error) {
		return l.adm.Do("GET", fmt.Sprintf("/contracts/%d/pdf", contract), nil)
	}, func(r *Response) bool {
		return r.Status == http.StatusOK && strings.HasPrefix(string(r.Body), "%PDF-")
	}, nil) {
		l.mu.Lock()
		l.pdfs++
		l.mu.Unlock()
	}
}

// TestScaleTwoReplicasBehaveAsOne runs the cross-context scenario through
// two replicas of every process, then keeps a mixed load running while
// one replica of each process in turn is SIGKILLed (mid-request,
// mid-relay, mid-delivery, mid-render) and started again, and checks that
// the replicas behaved as one.
func TestScaleTwoReplicasBehaveAsOne(t *testing.T) {
	s := startScaleStack(t, nil)
	sc := runScenario(t, s, s.DatabaseURL)
	doubleQualify(t, s, sc.adm, s.DatabaseURL, 20)
	checkLimits(t, s, sc.adm)
	if t.Failed() {
		return
	}

	// A key of its own with room for the load (the default quota is
	// smaller than a steady writer's rate).
	key := must(t, http.StatusCreated)(sc.adm.Do("POST", "/api-keys", map[string]any{"name": uniq("scale load"), "rate_limit_per_minute": 100000}))
	pub := s.Client()
	pub.Header.Set("X-API-Key", key.Data()["key"].(string))
	l := &load{t: t, adm: sc.adm, pub: pub, retried: map[string]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	worker := func(f func(n int)) {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				f(n)
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	// A mailbox on the test IMAP server, given new messages before each
	// kill: both mail replicas sweep it every second, one sync at a time.
	imap := imaptest.Start(t, "inbox@scale.test", "imap-secret")
	mailRun := uniq("scalemail")
	var mailIDs []string
	appendMail := func(n int) {
		for range n {
			id := fmt.Sprintf("<%s-%04d@scale.test>", mailRun, len(mailIDs))
			mailIDs = append(mailIDs, id)
			imap.Append(t, "INBOX", []byte(fmt.Sprintf("Message-ID: %s\r\nFrom: Sam Sender <sam@scale.test>\r\nTo: %s\r\n"+
				"Subject: Scale %d\r\nDate: Mon, 02 Mar 2026 10:00:00 +0000\r\nContent-Type: text/plain\r\n\r\nMessage %d.\r\n",
				id, imap.Username, len(mailIDs), len(mailIDs))))
		}
	}
	appendMail(50)
	mailbox := must(t, http.StatusCreated)(sc.adm.Do("POST", "/mailboxes", map[string]any{
		"host": imap.Host, "port": imap.Port, "tls": false, "username": imap.Username, "password": imap.Password,
	})).ID()

	// Each delivery takes the receiver 15 ms, so deliveries are in flight
	// when a webhooks replica dies (mid-delivery).
	sc.rc.setAnswer(func(received) int { time.Sleep(15 * time.Millisecond); return http.StatusOK })

	worker(l.createContact)
	worker(l.createContact)
	worker(l.publicLead)
	worker(l.importContacts)
	worker(l.qualify)
	worker(func(int) { l.pdf(sc.contract) })

	// One replica of each process in turn, alternating between the first
	// and the second: SIGKILL, HAProxy takes it out, it starts again and
	// HAProxy takes it back.
	time.Sleep(3 * time.Second)
	var outAfter []string
	for k, name := range append(slices.Clone(Services), "render", "gateway") {
		appendMail(40)
		i := k%2 + 1
		victim := ReplicaName(name, i)
		server := fmt.Sprintf("%s%d", name, i)
		killed := time.Now()
		s.Stop(victim, true)
		var status string
		for time.Since(killed) < 10*time.Second {
			if st, err := haproxyStatus(s, name+"_replicas", server); err == nil && strings.HasPrefix(st, "DOWN") {
				status = st
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		took := time.Since(killed)
		if status == "" || took > 5*time.Second {
			t.Errorf("HAProxy took %s out after %s (status %q), want within 5 s", victim, took.Round(10*time.Millisecond), status)
		}
		outAfter = append(outAfter, fmt.Sprintf("%s %.1fs", victim, took.Seconds()))
		time.Sleep(time.Second) // the load runs on the other replica alone
		if err := s.StartProcess(t.Context(), victim); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitReady(t.Context(), victim); err != nil {
			t.Fatal(err)
		}
		settle(t, 10*time.Second, victim+" back in HAProxy", func() error {
			if st, err := haproxyStatus(s, name+"_replicas", server); err != nil || st != "UP" {
				return fmt.Errorf("status %q (%v)", st, err)
			}
			return nil
		})
	}
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("taken out of HAProxy after: %s", strings.Join(outAfter, ", "))

	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range l.retried {
			if !yield(k) {
				return
			}
		}
	})
	var retried []string
	for _, k := range keys {
		retried = append(retried, fmt.Sprintf("%s ×%d", k, l.retried[k]))
		if strings.HasPrefix(k, "500 ") {
			t.Errorf("an internal error answered (a dead peer is a 502/503, not a 500): %s ×%d", k, l.retried[k])
		}
	}
	t.Logf("load: %d contacts, %d imported, %d public leads, %d qualifications, %d PDFs, %d IMAP messages; retried answers: %s",
		len(l.contacts), len(l.imported), len(l.public), len(l.qualified), l.pdfs, len(mailIDs), strings.Join(retried, ", "))
	for _, f := range l.failed {
		t.Errorf("load: %s", f)
	}
	if len(l.contacts) < 20 || len(l.imported) < 20 || len(l.public) < 10 || len(l.qualified) < 5 || l.pdfs < 5 {
		t.Errorf("too little load to prove anything: %d contacts, %d imported, %d public leads, %d qualifications, %d PDFs",
			len(l.contacts), len(l.imported), len(l.public), len(l.qualified), l.pdfs)
	}

	// Every accepted write exists exactly once.
	checkOneEach(t, s.DatabaseURL, "contacts.contacts", "email", l.emails)
	checkOneEach(t, s.DatabaseURL, "contacts.contacts", "email", l.imported)
	var qEmails, qCompanies []string
	for _, q := range l.qualified {
		qEmails, qCompanies = append(qEmails, q.email), append(qCompanies, q.company)
	}
	checkOneEach(t, s.DatabaseURL, "contacts.contacts", "email", qEmails)
	checkOneEach(t, s.DatabaseURL, "contacts.companies", "name", qCompanies)
	checkOneEach(t, s.DatabaseURL, "leads.leads", "email", qEmails)
	// A public lead answered 202 is delivered by intake's retry job.
	settle(t, 90*time.Second, "every accepted public lead is one lead", func() error {
		got := countBy(t, s.DatabaseURL, "leads.leads", "email", l.public)
		for _, e := range l.public {
			if n := got[strings.ToLower(e)]; n != 1 {
				return fmt.Errorf("%s: %d leads", e, n)
			}
		}
		return nil
	})

	// Every message of the mailbox stored once.
	settle(t, 90*time.Second, "the mailbox synced", func() error {
		r, err := sc.adm.Do("GET", fmt.Sprintf("/mailboxes/%d", mailbox), nil)
		if err != nil {
			return err
		}
		if r.Status != http.StatusOK || r.Data()["status"] != "ok" || r.Data()["last_uid"] != float64(len(mailIDs)) {
			return fmt.Errorf("mailbox of %d messages: %s", len(mailIDs), r)
		}
		return nil
	})
	checkOneEach(t, s.DatabaseURL, "mail.messages", "message_id", mailIDs)

	// Every outbox event relayed once; one expiry run today.
	events := checkOutbox(t, s, nil)
	checkExpiryOnce(t, s)

	// Every contact.created event is in the feed once and delivered to
	// the subscription under one webhook-id, none lost.
	ids := slices.Clone(sc.contacts)
	ids = append(ids, l.contacts...)
	for _, q := range l.qualified {
		if q.contact != 0 {
			ids = append(ids, q.contact)
		}
	}
	feed := feedCounts(t, sc.adm, "contact.created")
	for _, id := range ids {
		if feed[id] != 1 {
			t.Errorf("contact %d: %d contact.created events in the feed, want 1", id, feed[id])
		}
	}
	var redelivered int
	settle(t, 120*time.Second, "every contact.created delivered", func() error {
		byContact := map[int64]map[string]int{}
		for _, d := range sc.rc.deliveries(nil) {
			if byContact[recordID(d)] == nil {
				byContact[recordID(d)] = map[string]int{}
			}
			byContact[recordID(d)][d.ID]++
		}
		var missing []int64
		redelivered = 0
		for id := range feed {
			got := byContact[id]
			switch {
			case len(got) == 0:
				missing = append(missing, id)
			case len(got) > 1:
				return fmt.Errorf("contact %d delivered under %d webhook-ids: %v", id, len(got), got)
			}
			for _, n := range got {
				redelivered += n - 1
			}
		}
		if len(missing) > 0 {
			sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
			return fmt.Errorf("%d of %d events not delivered yet: %v", len(missing), len(feed), missing[:min(len(missing), 10)])
		}
		return nil
	})
	for _, d := range sc.rc.deliveries(nil) {
		verify(t, sc.secret, d)
	}
	t.Logf("webhooks: %d contact.created events delivered, one webhook-id each (%d sent again under the same id); %d outbox events relayed once each",
		len(feed), redelivered, events)
}
