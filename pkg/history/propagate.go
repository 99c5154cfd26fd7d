package history

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/opencrm/crm/pkg/contract/historyapi"
)

// Headers carrying who and how from one context to another on internal
// calls (a qualification creating the contact, the intake creating the
// lead): an internal request has no caller's token, so without them the
// receiving context would record the change as the system's.
const (
	ActorHeader = "X-Crm-Actor"
	ViaHeader   = "X-Crm-Via"
)

// Propagate sets h's actor and channel headers from ctx (what the
// receiving context should record); nothing when ctx acts for nobody.
func Propagate(ctx context.Context, h http.Header) {
	if a, ok := ActorOf(ctx); ok {
		if b, err := json.Marshal(a); err == nil {
			h.Set(ActorHeader, string(b))
		}
	}
	if via, ok := ctx.Value(viaKey{}).(string); ok {
		h.Set(ViaHeader, via)
	}
}

// Internal wraps guard (auth.RequireInternal: the cluster's secret) so
// that a request it lets through acts for the actor and channel its
// headers name. The headers are read only behind the guard: from outside
// the service network they cannot be sent.
func Internal(guard func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			var a historyapi.HistoryActor
			if s := r.Header.Get(ActorHeader); s != "" && json.Unmarshal([]byte(s), &a) == nil && validActor(a.Type) {
				ctx = WithActor(ctx, a)
			}
			if via := r.Header.Get(ViaHeader); validVia(via) {
				ctx = WithVia(ctx, via)
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		}))
	}
}

func validActor(t string) bool {
	switch t {
	case historyapi.ActorUser, historyapi.ActorToken, historyapi.ActorAPIKey, historyapi.ActorSystem:
		return true
	}
	return false
}

func validVia(v string) bool {
	switch v {
	case historyapi.ViaAPI, historyapi.ViaBatch, historyapi.ViaImport, historyapi.ViaQualification, historyapi.ViaMerge,
		historyapi.ViaIntake, historyapi.ViaSync, historyapi.ViaExpiry, historyapi.ViaErasure, historyapi.ViaSystem:
		return true
	}
	return false
}
