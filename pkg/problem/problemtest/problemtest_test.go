package problemtest_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/problem/problemtest"
)

func TestWantReadsWhatHandlersWrite(t *testing.T) {
	t.Parallel()
	h := httpx.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		return problem.Validation(problem.FieldError{Field: "email", Message: "must be a valid email address"},
			problem.FieldError{Field: "first_name", Message: "is required"})
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/contacts", nil))
	b := problemtest.Want(t, rec.Code, rec.Header(), rec.Body.Bytes(), http.StatusUnprocessableEntity,
		"validation_failed", "email", "first_name")
	if b.Type != problem.TypeURI("validation_failed") {
		t.Errorf("type = %q", b.Type)
	}
}
