package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// hit is one request a receiver got.
type hit struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is an httptest server whose answer a test sets per request.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	hits   []hit
	answer func(n int, w http.ResponseWriter, r *http.Request) // n counts from 1
}

func newReceiver(t testing.TB, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.hits = append(rc.hits, hit{header: r.Header.Clone(), body: body, at: time.Now()})
		n := len(rc.hits)
		ans := rc.answer
		rc.mu.Unlock()
		if ans == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		ans(n, w, r)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) url() string { return rc.srv.URL + "/hook" }

func (rc *receiver) got() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

func (rc *receiver) count() int { return len(rc.got()) }

func (rc *receiver) setAnswer(a func(n int, w http.ResponseWriter, r *http.Request)) {
	rc.mu.Lock()
	rc.answer = a
	rc.mu.Unlock()
}

func status(code int) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}
