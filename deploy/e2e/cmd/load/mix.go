package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencrm/crm/deploy/e2e"
)

// call is one request of an operation: the endpoint it is reported under,
// how long it took and whether it failed (transport error or an answer
// other than the expected status).
type call struct {
	endpoint string
	took     time.Duration
	err      error
}

// op is one weighted kind of user action; it may make several calls.
type op struct {
	weight int
	run    func(rec func(call))
}

// mix holds what the operations share: an admin session, an API key, a
// deal and template for contracts, a contract whose PDF is cached.
type mix struct {
	s        *e2e.Stack
	adm      *e2e.Client
	pub      *e2e.Client
	refresh  atomic.Value // string
	refreshM sync.Mutex
	deal     int64
	tpl      int64
	cached   int64
	contacts []int64
	mu       sync.Mutex
	seq      atomic.Int64
	ops      []op
	total    int
}

func newMix(s *e2e.Stack) (*mix, error) {
	m := &mix{s: s}
	c := s.Client()
	r, err := c.Do("POST", "/auth/login", map[string]string{"email": e2e.AdminEmail, "password": e2e.AdminPassword})
	if err != nil || r.Status != 200 {
		return nil, fmt.Errorf("login: %v %v", r, err)
	}
	m.adm = c.With(r.Data()["access_token"].(string))
	m.refresh.Store(r.Data()["refresh_token"].(string))
	key, err := m.expect(201, "POST", "/api-keys", map[string]any{"name": "load", "rate_limit_per_minute": 100000})
	if err != nil {
		return nil, err
	}
	m.pub = s.Client()
	m.pub.Header.Set("X-API-Key", key.Data()["key"].(string))
	co, err := m.expect(201, "POST", "/companies", map[string]any{"name": "Load Corp"})
	if err != nil {
		return nil, err
	}
	deal, err := m.expect(201, "POST", "/deals", map[string]any{"title": "Load deal", "value": "1000.00", "company_id": co.ID()})
	if err != nil {
		return nil, err
	}
	tpl, err := m.expect(201, "POST", "/contract-templates", map[string]any{
		"name": "Load MSA", "content": "<h1>Agreement</h1><p>{{licensee.company_name}} — {{deal.title}} — {{contract.number}}</p>",
		"footer_right": "Page {{page}} of {{pages}}",
	})
	if err != nil {
		return nil, err
	}
	m.deal, m.tpl = deal.ID(), tpl.ID()
	ct, err := m.expect(201, "POST", "/contracts", map[string]any{"deal_id": m.deal, "template_id": m.tpl, "title": "Cached"})
	if err != nil {
		return nil, err
	}
	m.cached = ct.ID()
	if _, err := m.expect(200, "GET", fmt.Sprintf("/contracts/%d/pdf", m.cached), nil); err != nil {
		return nil, err
	}
	for i := range 20 {
		r, err := m.expect(201, "POST", "/contacts", map[string]any{"first_name": "Seed", "last_name": fmt.Sprint(i), "email": fmt.Sprintf("seed%d@load.test", i)})
		if err != nil {
			return nil, err
		}
		m.contacts = append(m.contacts, r.ID())
	}
	m.ops = []op{
		{4, m.login}, {4, m.refreshToken}, {20, m.list}, {12, m.get}, {12, m.createContact},
		{10, m.updateContact}, {4, m.qualify}, {12, m.intake}, {2, m.generate},
		{12, m.pdfCached}, {4, m.export},
	}
	for _, o := range m.ops {
		m.total += o.weight
	}
	return m, nil
}

// pick draws an operation by weight.
func (m *mix) pick() op {
	n := rand.IntN(m.total)
	for _, o := range m.ops {
		if n < o.weight {
			return o
		}
		n -= o.weight
	}
	return m.ops[0]
}

func (m *mix) expect(status int, method, path string, body any) (*e2e.Response, error) {
	return m.with(m.adm, status, method, path, body)
}

func (m *mix) with(c *e2e.Client, status int, method, path string, body any) (*e2e.Response, error) {
	r, err := c.Do(method, path, body)
	if err != nil {
		return nil, err
	}
	if r.Status != status {
		return r, fmt.Errorf("%s %s: %d, want %d: %.200s", method, path, r.Status, status, r.Body)
	}
	return r, nil
}

// timed runs one call and records it under endpoint.
func timed(rec func(call), endpoint string, f func() (*e2e.Response, error)) *e2e.Response {
	start := time.Now()
	r, err := f()
	rec(call{endpoint: endpoint, took: time.Since(start), err: err})
	if err != nil {
		return nil
	}
	return r
}

func (m *mix) login(rec func(call)) {
	timed(rec, "POST /auth/login", func() (*e2e.Response, error) {
		return m.with(m.s.Client(), http.StatusOK, "POST", "/auth/login", map[string]string{"email": e2e.AdminEmail, "password": e2e.AdminPassword})
	})
}

// refreshToken rotates the shared refresh token (one at a time: a
// refresh token is single-use).
func (m *mix) refreshToken(rec func(call)) {
	m.refreshM.Lock()
	defer m.refreshM.Unlock()
	r := timed(rec, "POST /auth/refresh", func() (*e2e.Response, error) {
		return m.with(m.s.Client(), http.StatusOK, "POST", "/auth/refresh", map[string]string{"refresh_token": m.refresh.Load().(string)})
	})
	if r != nil {
		m.refresh.Store(r.Data()["refresh_token"].(string))
	}
}

func (m *mix) list(rec func(call)) {
	if rand.IntN(2) == 0 {
		timed(rec, "GET /contacts?search", func() (*e2e.Response, error) {
			return m.expect(http.StatusOK, "GET", "/contacts?search=load&sort_by=created_at&sort_dir=desc", nil)
		})
		return
	}
	timed(rec, "GET /leads", func() (*e2e.Response, error) { return m.expect(http.StatusOK, "GET", "/leads?per_page=50", nil) })
}

func (m *mix) contact() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.contacts[rand.IntN(len(m.contacts))]
}

func (m *mix) get(rec func(call)) {
	timed(rec, "GET /contacts/{id}", func() (*e2e.Response, error) {
		return m.expect(http.StatusOK, "GET", fmt.Sprintf("/contacts/%d", m.contact()), nil)
	})
}

func (m *mix) createContact(rec func(call)) {
	n := m.seq.Add(1)
	r := timed(rec, "POST /contacts", func() (*e2e.Response, error) {
		return m.expect(http.StatusCreated, "POST", "/contacts", map[string]any{
			"first_name": "Load", "last_name": fmt.Sprint(n), "email": fmt.Sprintf("load%d-%d@load.test", n, time.Now().UnixNano()),
		})
	})
	if r != nil {
		m.mu.Lock()
		if len(m.contacts) < 5000 {
			m.contacts = append(m.contacts, r.ID())
		}
		m.mu.Unlock()
	}
}

func (m *mix) updateContact(rec func(call)) {
	timed(rec, "PUT /contacts/{id}", func() (*e2e.Response, error) {
		return m.expect(http.StatusOK, "PUT", fmt.Sprintf("/contacts/%d", m.contact()), map[string]any{
			"first_name": "Load", "last_name": "Updated", "job_title": fmt.Sprint("Title ", rand.IntN(1000)),
		})
	})
}

func (m *mix) qualify(rec func(call)) {
	n := m.seq.Add(1)
	lead := timed(rec, "POST /leads", func() (*e2e.Response, error) {
		return m.expect(http.StatusCreated, "POST", "/leads", map[string]any{
			"first_name": "Lead", "last_name": fmt.Sprint(n), "email": fmt.Sprintf("lead%d-%d@load.test", n, time.Now().UnixNano()), "company": fmt.Sprintf("Lead Co %d-%d", n, time.Now().UnixNano()),
		})
	})
	if lead == nil {
		return
	}
	timed(rec, "POST /leads/{id}/qualify", func() (*e2e.Response, error) {
		return m.expect(http.StatusOK, "POST", fmt.Sprintf("/leads/%d/qualify", lead.ID()), map[string]any{"create_company": true, "create_deal": true, "deal_value": "500.00"})
	})
}

func (m *mix) intake(rec func(call)) {
	n := m.seq.Add(1)
	timed(rec, "POST /public/leads", func() (*e2e.Response, error) {
		r, err := m.pub.Do("POST", "/public/leads", map[string]any{"first_name": "Web", "last_name": fmt.Sprint(n), "email": fmt.Sprintf("web%d-%d@load.test", n, time.Now().UnixNano())})
		if err == nil && r.Status != http.StatusCreated && r.Status != http.StatusAccepted {
			err = fmt.Errorf("intake: %d: %.200s", r.Status, r.Body)
		}
		return r, err
	})
}

// generate creates a contract and downloads its first (uncached) PDF.
func (m *mix) generate(rec func(call)) {
	c := timed(rec, "POST /contracts", func() (*e2e.Response, error) {
		return m.expect(http.StatusCreated, "POST", "/contracts", map[string]any{"deal_id": m.deal, "template_id": m.tpl, "title": "Load contract"})
	})
	if c == nil {
		return
	}
	timed(rec, "GET /contracts/{id}/pdf (uncached)", func() (*e2e.Response, error) {
		return m.expect(http.StatusOK, "GET", fmt.Sprintf("/contracts/%d/pdf", c.ID()), nil)
	})
}

func (m *mix) pdfCached(rec func(call)) {
	timed(rec, "GET /contracts/{id}/pdf (cached)", func() (*e2e.Response, error) {
		return m.expect(http.StatusOK, "GET", fmt.Sprintf("/contracts/%d/pdf", m.cached), nil)
	})
}

func (m *mix) export(rec func(call)) {
	timed(rec, "GET /contacts/export", func() (*e2e.Response, error) {
		return m.expect(http.StatusOK, "GET", "/contacts/export?search=seed", nil)
	})
}
