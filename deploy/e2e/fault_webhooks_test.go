package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestFaultWebhooksKilledMidDelivery kills the webhooks process (SIGKILL)
// while a receiver holds a delivery open, and creates more contacts while
// it is down: after a restart every event is delivered (at least once,
// under the same webhook-id), none is lost, and the log shows each
// delivered.
func TestFaultWebhooksKilledMidDelivery(t *testing.T) {
	s := faultStack(t)
	adm := faultAdmin(t, s)
	rc := newReceiver(t)
	holding := make(chan string, 1)
	release := make(chan struct{})
	rc.setAnswer(func(d received) int {
		select {
		case holding <- d.ID:
			<-release // the first delivery hangs until the sender is dead
		default:
		}
		return http.StatusOK
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	hook, secret := subscribe(t, adm, rc.srv.URL, "contact.created")
	name := uniq("Killed")
	first := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Hook", "last_name": name}))

	var heldID string
	select {
	case heldID = <-holding:
	case <-time.After(30 * time.Second):
		t.Fatal("the first delivery never arrived")
	}
	s.Stop("webhooks", true)
	close(release)

	// Changes made while webhooks is down wait in the stream.
	ids := []int64{first.ID()}
	for i := range 5 {
		r := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": fmt.Sprint("Down", i), "last_name": name}))
		ids = append(ids, r.ID())
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Restart(ctx, "webhooks"); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(90 * time.Second)
	for {
		missing := 0
		for _, id := range ids {
			if len(rc.deliveries(func(d received) bool { return recordID(d) == id })) == 0 {
				missing++
			}
		}
		again := rc.deliveries(func(d received) bool { return d.ID == heldID })
		if missing == 0 && len(again) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: %d of %d contacts never delivered, the held event arrived %d times", missing, len(ids), len(again))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("all %d events delivered %.1f s after the restart", len(ids), time.Since(start).Seconds())
	for _, d := range rc.deliveries(nil) {
		verify(t, secret, d)
	}
	eventually(t, "every delivery logged as delivered", func() error {
		r := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/webhooks/%d/deliveries?per_page=100", hook), nil))
		for _, row := range r.JSON["data"].([]any) {
			if st := row.(map[string]any)["status"]; st != "delivered" {
				return fmt.Errorf("a delivery is %v: %v", st, row)
			}
		}
		if n := int(r.JSON["total"].(float64)); n != len(ids) {
			return fmt.Errorf("%d deliveries logged, want %d (one per event)", n, len(ids))
		}
		return nil
	})
}
