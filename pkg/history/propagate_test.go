package history_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/history"
)

// TestInternalCallsActForTheCaller: what one context's request acts for
// reaches the context it calls, and only behind the internal secret.
func TestInternalCallsActForTheCaller(t *testing.T) {
	t.Parallel()
	const secret = "test-internal-secret-0123456789"
	var got historyapi.HistoryActor
	var acting bool
	h := history.Internal(auth.RequireInternal(secret))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, acting = history.ActorOf(r.Context())
	}))
	claims := &auth.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "5"}, Role: auth.RoleUser, Name: "Ann"}
	ctx := history.WithVia(auth.WithClaims(context.Background(), claims), historyapi.ViaQualification)

	req := httptest.NewRequest(http.MethodPost, "/internal/contacts", nil)
	req.Header.Set(auth.InternalHeader, secret)
	history.Propagate(ctx, req.Header)
	h.ServeHTTP(httptest.NewRecorder(), req)
	five := int64(5)
	if diff := cmp.Diff(historyapi.HistoryActor{Type: historyapi.ActorUser, ID: &five, Name: "Ann"}, got); !acting || diff != "" {
		t.Errorf("acting %v for (-want +got):\n%s", acting, diff)
	}
	if v := req.Header.Get(history.ViaHeader); v != historyapi.ViaQualification {
		t.Errorf("via header %q", v)
	}

	// Without the secret the guard refuses, headers or not.
	acting = false
	req = httptest.NewRequest(http.MethodPost, "/internal/contacts", nil)
	history.Propagate(ctx, req.Header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || acting {
		t.Errorf("without the secret: %d, handler reached %v", rec.Code, acting)
	}
}
