// Package fakeidem gives the contract fakes the Idempotency-Key rules of
// the real services (pkg/idempotency): the same key and body replay the
// stored answer with Idempotent-Replayed: true, another body under the key
// is a 409 idempotency_key_reused, no key runs each time.
package fakeidem

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/opencrm/crm/pkg/problem"
)

type answer struct {
	hash   [32]byte
	status int
	body   []byte
}

// Store keeps the answers per route and key.
type Store struct {
	mu      sync.Mutex
	answers map[string]answer
}

// Reserve records an answer under key for another body, as if another
// request had used the key: any request with it is a 409.
func (s *Store) Reserve(scope, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answers == nil {
		s.answers = map[string]answer{}
	}
	s.answers[scope+" "+key] = answer{status: http.StatusCreated, body: []byte(`{"data":{"id":0}}`)}
}

// Run answers a keyed request: a replay, a 409, or create's answer (a
// status and a value, or a problem error), stored under the key.
func (s *Store) Run(w http.ResponseWriter, r *http.Request, scope string, raw []byte, create func() (int, any, error)) {
	key := r.Header.Get("Idempotency-Key")
	// The decoded JSON is hashed, so key order and spacing do not matter.
	var v any
	_ = json.Unmarshal(raw, &v)
	norm, _ := json.Marshal(v)
	sum := sha256.Sum256(norm)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answers == nil {
		s.answers = map[string]answer{}
	}
	if a, ok := s.answers[scope+" "+key]; ok && key != "" {
		if a.hash != sum {
			problem.Write(w, r, problem.Conflict("idempotency_key_reused", "this Idempotency-Key was used with a different request"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
		return
	}
	status, out, err := create()
	if err != nil {
		problem.Write(w, r, err)
		return
	}
	body, _ := json.Marshal(out)
	if key != "" {
		s.answers[scope+" "+key] = answer{hash: sum, status: status, body: body}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
