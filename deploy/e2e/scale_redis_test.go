//go:build scale

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestScaleRedisRestart restarts Redis (SIGKILL, then a new, empty server
// on the same port: no persistence) while two replicas of every process
// run under a writing load. No process exits, every replica is ready again,
// every write the load was told was accepted exists once, and what is
// written after the restart flows again: its contact.created events reach
// the feed and the webhook receiver once each (the consumer groups and
// queues are made again in the empty Redis).
func TestScaleRedisRestart(t *testing.T) {
	s := startScaleStack(t, nil)
	if s.redis == nil {
		t.Fatal("the scale stack has no private Redis")
	}
	sc := runScenario(t, s, s.DatabaseURL)

	pids := map[string]int{}
	for _, n := range append(append([]string{}, Services...), "render", "gateway") {
		for _, rn := range s.Replicas(n) {
			pids[rn] = s.Pid(rn)
		}
	}

	l := &load{t: t, adm: sc.adm, pub: s.Client(), retried: map[string]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				l.createContact(n)
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	time.Sleep(2 * time.Second)
	s.redis.Stop()
	down := time.Now()
	time.Sleep(3 * time.Second)
	if err := s.redis.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for n := range pids {
		settle(t, 60*time.Second, n+" ready after the Redis restart", func() error {
			return waitURL(t.Context(), s.URLs[n]+"/readyz", 0)
		})
	}
	ready := time.Since(down)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	for n, pid := range pids {
		if got := s.Pid(n); got != pid {
			t.Errorf("%s restarted (pid %d, was %d): a Redis outage must not end a process:\n%s", n, got, pid, s.Logs(n))
		}
	}
	for _, f := range l.failed {
		t.Errorf("load: %s", f)
	}
	var retried []string
	for k, v := range l.retried {
		retried = append(retried, fmt.Sprintf("%s ×%d", k, v))
	}
	checkOneEach(t, s.DatabaseURL, "contacts.contacts", "email", l.emails)

	// After the restart: new contacts are created, in the feed and
	// delivered once each.
	var after []int64
	for i := range 20 {
		r := must(t, http.StatusCreated)(sc.adm.Do("POST", "/contacts", map[string]any{
			"first_name": "Af", "last_name": "Ter", "email": fmt.Sprintf("%s-%d@scale.test", uniq("after"), i)}))
		after = append(after, r.ID())
	}
	settle(t, 60*time.Second, "contacts created after the restart in the feed", func() error {
		feed := feedCounts(t, sc.adm, "contact.created")
		for _, id := range after {
			if feed[id] != 1 {
				return fmt.Errorf("contact %d in the feed %d times", id, feed[id])
			}
		}
		return nil
	})
	settle(t, 60*time.Second, "contacts created after the restart delivered", func() error {
		for _, id := range after {
			ids := map[string]bool{}
			for _, d := range sc.rc.deliveries(func(d received) bool { return recordID(d) == id }) {
				ids[d.ID] = true
			}
			if len(ids) != 1 {
				return fmt.Errorf("contact %d delivered under %d webhook-ids", id, len(ids))
			}
		}
		return nil
	})
	t.Logf("Redis restarted under load: every replica ready %s after the kill; %d contacts written around it, each once; retried answers: %s",
		ready.Round(100*time.Millisecond), len(l.emails), strings.Join(retried, ", "))
}
