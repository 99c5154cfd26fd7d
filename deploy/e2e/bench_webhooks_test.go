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
// clients (as the intake benchmark drives its route), first with no
// subscription (what creation alone reaches on this machine), then while 10
// subscriptions receive contact.created at a local receiver that verifies
// every signature. Reported per round: the creation rate, the delivery
// rate during the same window against 10 × the creation rate (keeping up
// means 1.0, less the window's edge: deliveries of the last fraction of a
// second arrive after it), the backlog owed at half-time and at the end of
// the window (a backlog that keeps up stays flat), how long it takes to
// drain once creation stops, and the latency from the contact's 201 to
// each signed delivery.
func BenchmarkWebhooks(b *testing.B) {
	const clients, subs, rounds = 16, 10, 2
	dur := 20 * time.Second
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
	b.ResetTimer()

	// create runs the clients for dur; every second it calls tick with the
	// contacts created so far.
	create := func(round int, tick func(n int64)) (n, errs int64, window time.Duration) {
		var made, failed atomic.Int64
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
						failed.Add(1)
						continue
					}
					created.Store(r.ID(), time.Now())
					made.Add(1)
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		for t := time.NewTicker(time.Second); ; {
			select {
			case <-t.C:
				tick(made.Load())
				continue
			case <-done:
				t.Stop()
			}
			break
		}
		return made.Load(), failed.Load(), time.Since(start)
	}

	header := []string{"round", "subscriptions", "contacts/s", "deliveries/s (same window)", "deliveries ÷ (10 × contacts)",
		"backlog at half-time / at the end", "drain after the last create, s", "delivered", "201→delivery p50 ms", "p95 ms", "p99 ms", "errors"}
	n, errs, window := create(0, func(int64) {})
	rows := [][]string{{"0", "0", fmt.Sprintf("%.0f", float64(n)/window.Seconds()), "", "", "", "", "", "", "", "", strconv.FormatInt(errs, 10)}}

	for i := range subs {
		r := adm.mustDo(b, "POST", "/webhooks", map[string]any{"url": fmt.Sprintf("%s/%d", srv.URL, i),
			"events": []string{"contact.created"}, "description": "bench"}, http.StatusCreated)
		secrets[i], _ = r.Data()["secret"].(string)
		defer adm.Do("DELETE", fmt.Sprintf("/webhooks/%d", r.ID()), nil)
	}
	keptUp := errs == 0
	for round := 1; round <= rounds; round++ {
		mu.Lock()
		lat = lat[:0]
		mu.Unlock()
		startDelivered := delivered.Load()
		var backlog []int64
		n, errs, window := create(round, func(n int64) {
			backlog = append(backlog, n*subs-(delivered.Load()-startDelivered))
		})
		inWindow := delivered.Load() - startDelivered
		want := n * subs
		drainStart := time.Now()
		for delivered.Load()-startDelivered < want && time.Since(drainStart) < 5*time.Minute {
			time.Sleep(20 * time.Millisecond)
		}
		drain := time.Since(drainStart)
		got := delivered.Load() - startDelivered
		createRate := float64(n) / window.Seconds()
		deliverRate := float64(inWindow) / window.Seconds()
		ratio := deliverRate / (createRate * subs)
		mu.Lock()
		p50, p95, p99 := pct(lat, 0.5), pct(lat, 0.95), pct(lat, 0.99)
		mu.Unlock()
		if got < want || ratio < 0.95 || drain > 2*time.Second || errs > 0 || bad.Load() > 0 {
			keptUp = false
		}
		half, end := int64(0), want-inWindow
		if len(backlog) > 0 {
			half = backlog[len(backlog)/2]
		}
		rows = append(rows, []string{strconv.Itoa(round), strconv.Itoa(subs), fmt.Sprintf("%.0f", createRate),
			fmt.Sprintf("%.0f", deliverRate), fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%d / %d", half, end),
			fmt.Sprintf("%.2f", drain.Seconds()), fmt.Sprintf("%d/%d", got, want), ms(p50), ms(p95), ms(p99),
			strconv.FormatInt(errs+bad.Load(), 10)})
	}
	b.StopTimer()
	rows = append(rows, []string{"kept up (ratio ≥ 0.95, drained ≤ 2 s, all delivered, 0 errors)", yes(keptUp), "", "", "", "", "", "", "", "", "", ""})
	report(b, fmt.Sprintf("Webhooks: contacts created by %d clients for %s, alone, then with %d subscriptions each receiving contact.created", clients, dur, subs),
		header, rows)
}
