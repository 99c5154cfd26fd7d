package api

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// TestUploadLimit: the declared body limit of an upload leaves a signed
// copy of the largest size room for its multipart framing.
func TestUploadLimit(t *testing.T) {
	t.Parallel()
	if got, want := contractsapi.UploadExecuted.BodyLimit, int64(contracts.MaxSignedCopy+1<<20); got != want {
		t.Errorf("UploadExecuted.BodyLimit = %d, want %d", got, want)
	}
}
