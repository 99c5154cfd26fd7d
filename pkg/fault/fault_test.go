package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/opencrm/crm/pkg/fault"
)

func TestIsMatchesCode(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("load lead: %w", fault.NotFound("lead"))
	if !errors.Is(err, fault.NotFound("")) {
		t.Error("a wrapped not-found is not found")
	}
	if errors.Is(err, fault.Conflict("", "")) {
		t.Error("a not-found is not a conflict")
	}
	if got := fault.KindOf(err); got != fault.KindNotFound {
		t.Errorf("KindOf = %v, want not_found", got)
	}
	if got := fault.KindOf(errors.New("boom")); got != fault.KindInternal {
		t.Errorf("KindOf(plain error) = %v, want internal", got)
	}
}

func TestWithCopies(t *testing.T) {
	t.Parallel()
	base := fault.Conflict("duplicate_email", "a contact has this email")
	got := base.With("existing_id", int64(7))
	if base.Extra != nil {
		t.Errorf("With changed the original: %v", base.Extra)
	}
	if got.Extra["existing_id"] != int64(7) {
		t.Errorf("Extra = %v", got.Extra)
	}
}
