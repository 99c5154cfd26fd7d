package contracts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// PutExecutedFile keeps the copy's metadata once apply agrees.
func (m *memStore) PutExecutedFile(_ context.Context, id int64, f contracts.NewExecutedFile, apply func(c *contracts.Contract, replacing bool) error) (contracts.Contract, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.contracts[id]
	if !ok {
		return contracts.Contract{}, fault.NotFound("contract")
	}
	if err := apply(&c, c.ExecutedFile != nil); err != nil {
		return contracts.Contract{}, err
	}
	if _, err := io.Copy(io.Discard, f.Data); err != nil {
		return contracts.Contract{}, err
	}
	c.ExecutedFile = &contracts.ExecutedFile{Filename: f.Filename, Size: f.Size, SHA256: f.SHA256}
	m.contracts[id] = c
	return c, nil
}

// failingReader yields data, then err: an upload the edge cut off.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// refusal is what a client sees of a refused upload.
type refusal struct {
	Kind   fault.Kind
	Code   string
	Detail string
	Fields []fault.Field
}

func refusalOf(t *testing.T, err error) refusal {
	t.Helper()
	var f *fault.Error
	if !errors.As(err, &f) {
		t.Fatalf("error %v is not a fault", err)
	}
	return refusal{f.Kind, f.Code, f.Detail, f.Fields}
}

// TestSignedCopyRefusals: an upload is checked by content (a PDF header, an
// end marker, a structure that parses) and by size, before anything is
// stored; a copy is never replaced, and only a draft, active or executed
// contract takes one.
func TestSignedCopyRefusals(t *testing.T) {
	t.Parallel()
	d := newDomain(t)
	newContract := func(t *testing.T, status contracts.Status) int64 {
		t.Helper()
		in := contracts.ContractInput{}
		in.DealID = d.deal
		in.TemplateID = d.template
		in.Title = "Licence agreement"
		c, err := d.svc.CreateContract(t.Context(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.store.UpdateContract(t.Context(), c.ID, func(c *contracts.Contract) error {
			c.Status = status
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	invalidFile := func(msg string) refusal {
		return refusal{fault.KindInvalid, "validation_failed", "one or more fields are invalid", []fault.Field{{Field: "file", Message: msg}}}
	}
	notPDF := refusal{fault.KindUnsupported, "unsupported_media_type", "the file is not a PDF document", nil}
	unreadable := invalidFile("is not a readable PDF document (it has a PDF header but does not parse as one)")
	tests := []struct {
		name string
		body io.Reader
		want refusal
	}{
		{"empty file", bytes.NewReader(nil), invalidFile("is empty")},
		{"html named pdf", strings.NewReader("<html><body><script>alert(1)</script></body></html>"), notPDF},
		{"pdf header without trailer", strings.NewReader("%PDF-1.7\n" + strings.Repeat("x", 3000)), notPDF},
		{"html with pdf header and end marker", strings.NewReader("%PDF-1.7\n<html><body><script>alert(1)</script></body></html>\n%%EOF\n"), unreadable},
		{"truncated pdf", bytes.NewReader(contracts.OnePagePDF("x")[:200]), notPDF},
		{"pdf without its catalog", bytes.NewReader(bytes.Replace(contracts.OnePagePDF("x"), []byte("/Root 1 0 R"), []byte("/Root 9 0 R"), 1)), unreadable},
		{"body over its limit", &failingReader{[]byte("%PDF-1.7\n"), contracts.ErrBodyTooLarge},
			refusal{fault.KindTooLarge, "payload_too_large", fmt.Sprintf("the file exceeds %d bytes", contracts.MaxSignedCopy), nil}},
		{"body cut short", &failingReader{contracts.OnePagePDF("x")[:100], io.ErrUnexpectedEOF}, invalidFile("the upload is incomplete or malformed")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := newContract(t, contracts.Draft)
			_, err := d.svc.UploadExecuted(t.Context(), id, "signed.pdf", tc.body, nil)
			if diff := cmp.Diff(tc.want, refusalOf(t, err)); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			c, err := d.svc.GetContract(t.Context(), id)
			if err != nil || c.Status != contracts.Draft || c.ExecutedFile != nil {
				t.Errorf("a refused upload changed the contract: %v %+v", err, c)
			}
		})
	}
	t.Run("never replaced", func(t *testing.T) {
		t.Parallel()
		id := newContract(t, contracts.Active)
		c, err := d.svc.UploadExecuted(t.Context(), id, "../signed.PDF", bytes.NewReader(contracts.OnePagePDF("first")), nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != contracts.Executed || c.ExecutedFile == nil || c.ExecutedFile.Filename != "signed.PDF" {
			t.Fatalf("after upload: %s %+v", c.Status, c.ExecutedFile)
		}
		_, err = d.svc.UploadExecuted(t.Context(), id, "again.pdf", bytes.NewReader(contracts.OnePagePDF("second")), nil)
		want := refusal{fault.KindConflict, "conflict",
			"this contract already has a signed copy; an admin deletes it (DELETE /contracts/{id}/executed) before another is uploaded", nil}
		if diff := cmp.Diff(want, refusalOf(t, err)); diff != "" {
			t.Errorf("refusal (-want +got):\n%s", diff)
		}
	})
	t.Run("terminated", func(t *testing.T) {
		t.Parallel()
		id := newContract(t, contracts.Terminated)
		_, err := d.svc.UploadExecuted(t.Context(), id, "signed.pdf", bytes.NewReader(contracts.OnePagePDF("x")), nil)
		want := refusal{fault.KindConflict, "invalid_transition", "a contract cannot move from terminated to executed", nil}
		if diff := cmp.Diff(want, refusalOf(t, err)); diff != "" {
			t.Errorf("refusal (-want +got):\n%s", diff)
		}
	})
}
