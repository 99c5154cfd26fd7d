package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// BenchmarkWebhooks: contacts created through the gateway by 16 closed-loop
// clients (as the intake benchmark drives its route) while 10 subscriptions
// receive contact.created at a local receiver that verifies every
// signature. Reported: the creation rate, the delivery rate during the
// same window against 10 × the creation rate (keeping up means 1.0), how
// long the backlog takes to drain once creation stops, and the latency from
// the contact's 201 to each signed delivery.
func BenchmarkWebhooks(b *testing.B) {
	const clients, subs, rounds = 16, 10, 2
	dur := 10 * time.Second
	adm := benchAdmin(b)

	var created sync.Map // contact id → time its 201 arrived
	var mu sync.Mutex
	var lat []time.Duration
	var delivered, bad atomic.Int64
	secrets := make([]string, subs)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		body, _ := io.ReadAll(r.Body)
		sub, _ := strconv.Atoi(r.URL.Path[1:])
		if sub < 0 || sub >= subs || webhooksapi.Verify(secrets[sub], r.Header.Get(webhooksapi.HeaderID),
			r.Header.Get(webhooksapi.HeaderTimestamp), r.Header.Get(webhooksapi.HeaderSignature), body, arrived, time.Minute) != nil {
			bad.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var ev struct {
			Data struct {
				ID int64 `json:"id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &ev)
		if at, ok := created.Load(ev.Data.ID); ok {
			mu.Lock()
			lat = append(lat, arrived.Sub(at.(time.Time)))
			mu.Unlock()
		}
		delivered.Add(1)
	}))
	l, err := net.Listen("tcp", receiverHost+":0")
	if err != nil {
		b.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	for i := range subs {
		r := adm.mustDo(b, "POST", "/webhooks", map[string]any{"url": fmt.Sprintf("%s/%d", srv.URL, i),
			"events": []string{"contact.created"}, "description": "bench"}, http.StatusCreated)
		secrets[i], _ = r.Data()["secret"].(string)
		defer adm.Do("DELETE", fmt.Sprintf("/webhooks/%d", r.ID()), nil)
	}
	b.ResetTimer()

	var rows [][]string
	keptUp := true
	for round := 1; round <= rounds; round++ {
		mu.Lock()
		lat = lat[:0]
		mu.Unlock()
		startDelivered := delivered.Load()
		var n, errs atomic.Int64
		start := time.Now()
		deadline := start.Add(dur)
		var wg sync.WaitGroup
		for w := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := adm.With(adm.Token)
				cl.Record = nil
				for i := 0; time.Now().Before(deadline); i++ {
					r, err := cl.Do("POST", "/contacts", map[string]any{"first_name": "Hook",
						"last_name": fmt.Sprintf("Bench %d-%d-%d", round, w, i)})
					if err != nil || r.Status != http.StatusCreated {
						errs.Add(1)
						continue
					}
					created.Store(r.ID(), time.Now())
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		window := time.Since(start)
		inWindow := delivered.Load() - startDelivered
		want := n.Load() * subs
		drainStart := time.Now()
		for delivered.Load()-startDelivered < want && time.Since(drainStart) < 5*time.Minute {
			time.Sleep(20 * time.Millisecond)
		}
		drain := time.Since(drainStart)
		got := delivered.Load() - startDelivered
		createRate := float64(n.Load()) / window.Seconds()
		deliverRate := float64(inWindow) / window.Seconds()
		ratio := deliverRate / (createRate * subs)
		mu.Lock()
		p50, p95, p99 := pct(lat, 0.5), pct(lat, 0.95), pct(lat, 0.99)
		mu.Unlock()
		if got < want || ratio < 0.95 || drain > 2*time.Second || errs.Load() > 0 || bad.Load() > 0 {
			keptUp = false
		}
		rows = append(rows, []string{strconv.Itoa(round), fmt.Sprintf("%.0f", createRate),
			fmt.Sprintf("%.0f", deliverRate), fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%.2f", drain.Seconds()),
			fmt.Sprintf("%d/%d", got, want), ms(p50), ms(p95), ms(p99), strconv.FormatInt(errs.Load()+bad.Load(), 10)})
	}
	b.StopTimer()
	rows = append(rows, []string{"kept up (ratio ≥ 0.95, drained ≤ 2 s, all delivered, 0 errors)", yes(keptUp), "", "", "", "", "", "", "", ""})
	report(b, fmt.Sprintf("Webhooks: contacts created by %d clients for %s, %d subscriptions each receiving contact.created", clients, dur, subs),
		[]string{"round", "contacts/s", "deliveries/s (same window)", "deliveries ÷ (10 × contacts)", "drain after the last create, s",
			"delivered", "201→delivery p50 ms", "p95 ms", "p99 ms", "errors"}, rows)
}
