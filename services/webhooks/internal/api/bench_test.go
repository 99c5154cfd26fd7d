package api_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/opencrm/crm/services/webhooks/internal/delivery"
)

// BenchmarkDelivery ingests b.N events for 10 subscriptions (one local
// receiver) and waits until all 10·b.N deliveries are in; it reports
// deliveries/s and the p50/p95 from the change to its arrival.
func BenchmarkDelivery(b *testing.B) {
	e := newEnv(b, withDelivery(func(c *delivery.Config) { c.Workers = 20; c.Tick = 200 * time.Millisecond }))
	var lat []time.Duration
	rc := newReceiver(b, nil)
	for range 10 {
		e.create(rc.url(), "*")
	}
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		e.emit("contacts", "contact.created", strconv.Itoa(i), map[string]any{"id": i})
	}
	want := 10 * b.N
	deadline := time.Now().Add(5 * time.Minute)
	for rc.count() < want {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d delivered", rc.count(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	b.StopTimer()
	for _, h := range rc.got() {
		var ev sentEvent
		_ = json.Unmarshal(h.body, &ev)
		at, err := time.Parse(time.RFC3339Nano, ev.CreatedAt)
		if err == nil {
			lat = append(lat, h.at.Sub(at))
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(want)/took.Seconds(), "deliveries/s")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*95/100].Milliseconds()), "p95-ms")
	}
}

// BenchmarkDeliveryBacklog ingests b.N events for 10 subscriptions (one
// local receiver) with the engine stopped, then starts it and reports how
// fast it drains the 10·b.N deliveries: the delivery side alone, without
// ingest competing.
func BenchmarkDeliveryBacklog(b *testing.B) {
	e := newEnv(b, noWorkers(), withDelivery(func(c *delivery.Config) { c.Workers = 20; c.Tick = 200 * time.Millisecond }))
	rc := newReceiver(b, nil)
	for range 10 {
		e.create(rc.url(), "*")
	}
	for i := range b.N {
		e.emit("contacts", "contact.created", strconv.Itoa(i), map[string]any{"id": i})
	}
	b.ResetTimer()
	start := time.Now()
	e.start()
	want := 10 * b.N
	deadline := time.Now().Add(5 * time.Minute)
	for rc.count() < want {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d delivered", rc.count(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(want)/time.Since(start).Seconds(), "deliveries/s")
}
